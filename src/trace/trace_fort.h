/* mpitempo: what the generated wrappers of the MPI Fortran bindings (trace_fort.c, made by
 * gen_fortran.py) use; implemented in trace_fort_rt.c. */
#ifndef MT_TRACE_FORT_H
#define MT_TRACE_FORT_H

#include "trace/trace.h"

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "the Fortran wrappers pass INTEGER arrays as int arrays");

/* INTEGERs in a Fortran status (MPI_STATUS_SIZE of mpif.h): MPI-4 names it in C */
#ifdef MPI_F_STATUS_SIZE
#define TR_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define TR_F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))
#endif

/* how a Fortran call reaches the C wrappers, decided at MPI_INIT (docs/trace.md, Fortran) */
enum { TR_FORT_UNKNOWN = 0, TR_FORT_FORWARD = 1, TR_FORT_CONVERT = 2 };
extern int tr_fort_mode;
int tr_f_decide(void);   /* the mode when MPI_INIT was called from C (trace_fort_rt.c) */
static inline int tr_f_mode(void) { return tr_fort_mode ? tr_fort_mode : tr_f_decide(); }

void *tr_f_next(const char *lower);          /* the library's Fortran entry of mpi_<name> (pmpi_...), or NULL */
void *tr_f_buf(void *p);                      /* Fortran MPI_IN_PLACE / MPI_BOTTOM -> C */
int *tr_f_weights(MPI_Fint *p);               /* Fortran MPI_UNWEIGHTED / MPI_WEIGHTS_EMPTY -> C */
void *tr_f_scratch(int slot, size_t bytes);   /* per-slot scratch arrays (one call at a time) */
int tr_f_ntypes(MPI_Comm comm, int recv);     /* datatype array length of an alltoallw */
int tr_f_nneigh(MPI_Comm comm, int out);      /* out- or in-degree of a topology communicator */

#endif
