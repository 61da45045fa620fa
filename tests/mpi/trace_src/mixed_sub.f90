! The Fortran part of mixed_main.c: an in-place allreduce and a barrier on the communicator given.
subroutine mixed_sub(comm, result)
  implicit none
  include 'mpif.h'
  integer, intent(in) :: comm
  integer, intent(out) :: result
  integer :: rank, ierr
  call MPI_COMM_RANK(comm, rank, ierr)
  result = rank + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, result, 1, MPI_INTEGER, MPI_SUM, comm, ierr)
  call MPI_BARRIER(comm, ierr)
end subroutine mixed_sub
