! The Fortran part of the tracer's coverage test (tests/mpi/test_trace_fortran.py): MPI through
! mpif.h (or, compiled with -DMT_USE_MODULE, the mpi module) on 2 or more ranks: point-to-point
! and collectives on MPI_COMM_WORLD and on a split communicator whose ranks are in reverse order,
! persistent requests, a probe, WAITANY (indices from 1), ALLTOALLW (an array of datatypes), a
! distributed graph with MPI_UNWEIGHTED and a neighbourhood collective, and the sentinels
! MPI_IN_PLACE, MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE. Checks its own results (exit code 1 when one is wrong) and writes how
! often it called each MPI routine to DIR/fmanifest-RANK.txt (the first argument).
program fortran_app
#ifdef MT_USE_MODULE
  use mpi
#endif
  implicit none
#ifndef MT_USE_MODULE
  include 'mpif.h'
#endif
  logical :: flag
  integer :: ierr, rank, nranks, sub, subrank, left, right, i
  integer, parameter :: NN = 22
  integer :: req(2), r1, sbuf, val, st(MPI_STATUS_SIZE), ncalls(NN), st2(MPI_STATUS_SIZE, 2)
  integer :: preq(2), idx, seen, dg, srcs(1), dsts(1)
  ! receive buffers of non-blocking and persistent calls change behind the compiler's back
  integer, volatile :: rbuf, pin
  integer, allocatable :: sa(:), ra(:), cnts(:), displs(:), types(:)
  character(len=512) :: dir
  character(len=32), parameter :: names(NN) = [character(len=32) :: 'MPI_Comm_rank', 'MPI_Comm_size', &
       'MPI_Comm_split', 'MPI_Send', 'MPI_Recv', 'MPI_Isend', 'MPI_Irecv', 'MPI_Waitall', &
       'MPI_Allreduce', 'MPI_Bcast', 'MPI_Sendrecv', 'MPI_Ibarrier', 'MPI_Test', 'MPI_Wait', 'MPI_Comm_free', &
       'MPI_Send_init', 'MPI_Recv_init', 'MPI_Startall', 'MPI_Request_free', 'MPI_Probe', 'MPI_Waitany', &
       'MPI_Alltoallw']
  integer, parameter :: NGRAPH = 2
  character(len=32), parameter :: gnames(NGRAPH) = [character(len=32) :: 'MPI_Dist_graph_create_adjacent', &
       'MPI_Neighbor_allgather']
  integer :: gcalls(NGRAPH)

  ncalls = 0
  gcalls = 0
  call get_command_argument(1, dir)
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr); ncalls(1) = ncalls(1) + 1
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nranks, ierr); ncalls(2) = ncalls(2) + 1
  left = mod(rank - 1 + nranks, nranks)
  right = mod(rank + 1, nranks)

  ! a split communicator with the ranks in reverse order
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, 0, nranks - rank, sub, ierr); ncalls(3) = ncalls(3) + 1
  call MPI_COMM_RANK(sub, subrank, ierr); ncalls(1) = ncalls(1) + 1
  if (subrank /= nranks - 1 - rank) call fail('split order')

  ! a ring on the split communicator: sub rank s sends to s+1
  sbuf = 100 + rank
  if (mod(subrank, 2) == 0) then
    call MPI_SEND(sbuf, 1, MPI_INTEGER, mod(subrank + 1, nranks), 11, sub, ierr); ncalls(4) = ncalls(4) + 1
    call MPI_RECV(rbuf, 1, MPI_INTEGER, mod(subrank - 1 + nranks, nranks), 11, sub, st, ierr)
    ncalls(5) = ncalls(5) + 1
  else
    call MPI_RECV(rbuf, 1, MPI_INTEGER, mod(subrank - 1 + nranks, nranks), 11, sub, st, ierr)
    ncalls(5) = ncalls(5) + 1
    call MPI_SEND(sbuf, 1, MPI_INTEGER, mod(subrank + 1, nranks), 11, sub, ierr); ncalls(4) = ncalls(4) + 1
  end if
  ! the sender of sub rank s-1 is world rank nranks-1-(s-1) = rank+1
  if (rbuf /= 100 + right .or. st(MPI_SOURCE) /= mod(subrank - 1 + nranks, nranks)) call fail('ring on sub')

  ! non-blocking on MPI_COMM_WORLD, statuses ignored
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, left, 12, MPI_COMM_WORLD, req(1), ierr); ncalls(7) = ncalls(7) + 1
  call MPI_ISEND(sbuf, 1, MPI_INTEGER, right, 12, MPI_COMM_WORLD, req(2), ierr); ncalls(6) = ncalls(6) + 1
  call MPI_WAITALL(2, req, MPI_STATUSES_IGNORE, ierr); ncalls(8) = ncalls(8) + 1
  if (rbuf /= 100 + left .or. req(1) /= MPI_REQUEST_NULL) call fail('isend/irecv')

  ! collectives: in place on the split communicator, a broadcast from world rank 1
  val = rank + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, val, 1, MPI_INTEGER, MPI_SUM, sub, ierr); ncalls(9) = ncalls(9) + 1
  if (val /= nranks * (nranks + 1) / 2) call fail('allreduce in place')
  val = 7 * rank
  call MPI_BCAST(val, 1, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr); ncalls(10) = ncalls(10) + 1
  if (val /= 7) call fail('bcast')
  call MPI_SENDRECV(sbuf, 1, MPI_INTEGER, right, 13, rbuf, 1, MPI_INTEGER, left, 13, MPI_COMM_WORLD, &
                    MPI_STATUS_IGNORE, ierr); ncalls(11) = ncalls(11) + 1
  if (rbuf /= 100 + left) call fail('sendrecv')

  ! a non-blocking barrier completed by MPI_TEST / MPI_WAIT
  call MPI_IBARRIER(sub, r1, ierr); ncalls(12) = ncalls(12) + 1
  call MPI_TEST(r1, flag, MPI_STATUS_IGNORE, ierr); ncalls(13) = ncalls(13) + 1
  call MPI_WAIT(r1, MPI_STATUS_IGNORE, ierr); ncalls(14) = ncalls(14) + 1
  call MPI_COMM_FREE(sub, ierr); ncalls(15) = ncalls(15) + 1
  if (sub /= MPI_COMM_NULL) call fail('comm_free')

  ! persistent requests, a statuses array
  call MPI_RECV_INIT(pin, 1, MPI_INTEGER, left, 14, MPI_COMM_WORLD, preq(1), ierr); ncalls(17) = ncalls(17) + 1
  call MPI_SEND_INIT(sbuf, 1, MPI_INTEGER, right, 14, MPI_COMM_WORLD, preq(2), ierr); ncalls(16) = ncalls(16) + 1
  do i = 1, 2
    pin = -1
    call MPI_STARTALL(2, preq, ierr); ncalls(18) = ncalls(18) + 1
    call MPI_WAITALL(2, preq, st2, ierr); ncalls(8) = ncalls(8) + 1
    if (pin /= 100 + left .or. st2(MPI_SOURCE, 1) /= left .or. st2(MPI_TAG, 1) /= 14) call fail('persistent')
  end do
  call MPI_REQUEST_FREE(preq(1), ierr); ncalls(19) = ncalls(19) + 1
  call MPI_REQUEST_FREE(preq(2), ierr); ncalls(19) = ncalls(19) + 1
  if (preq(1) /= MPI_REQUEST_NULL) call fail('request_free')

  ! a probe, then the receive of what it found
  call MPI_ISEND(sbuf, 1, MPI_INTEGER, right, 15, MPI_COMM_WORLD, r1, ierr); ncalls(6) = ncalls(6) + 1
  call MPI_PROBE(MPI_ANY_SOURCE, 15, MPI_COMM_WORLD, st, ierr); ncalls(20) = ncalls(20) + 1
  if (st(MPI_SOURCE) /= left) call fail('probe')
  call MPI_RECV(rbuf, 1, MPI_INTEGER, st(MPI_SOURCE), 15, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
  ncalls(5) = ncalls(5) + 1
  call MPI_WAIT(r1, MPI_STATUS_IGNORE, ierr); ncalls(14) = ncalls(14) + 1

  ! waitany: Fortran indices count from 1
  call MPI_IRECV(rbuf, 1, MPI_INTEGER, left, 16, MPI_COMM_WORLD, req(1), ierr); ncalls(7) = ncalls(7) + 1
  call MPI_ISEND(sbuf, 1, MPI_INTEGER, right, 16, MPI_COMM_WORLD, req(2), ierr); ncalls(6) = ncalls(6) + 1
  seen = 0
  do i = 1, 2
    call MPI_WAITANY(2, req, idx, st, ierr); ncalls(21) = ncalls(21) + 1
    if (idx < 1 .or. idx > 2 .or. req(idx) /= MPI_REQUEST_NULL) call fail('waitany index')
    seen = seen + idx
  end do
  if (seen /= 3 .or. rbuf /= 100 + left) call fail('waitany')

  ! alltoallw: an array of datatypes, displacements in bytes
  allocate(sa(nranks), ra(nranks), cnts(nranks), displs(nranks), types(nranks))
  do i = 1, nranks
    sa(i) = 10 * rank + i - 1
    cnts(i) = 1
    displs(i) = 4 * (i - 1)
    types(i) = MPI_INTEGER
  end do
  ra = -1
  call MPI_ALLTOALLW(sa, cnts, displs, types, ra, cnts, displs, types, MPI_COMM_WORLD, ierr)
  ncalls(22) = ncalls(22) + 1
  do i = 1, nranks
    if (ra(i) /= 10 * (i - 1) + rank) call fail('alltoallw')
  end do

  ! a distributed graph (the ring) without weights, and a neighbourhood collective on it
  srcs(1) = left
  dsts(1) = right
  call MPI_DIST_GRAPH_CREATE_ADJACENT(MPI_COMM_WORLD, 1, srcs, MPI_UNWEIGHTED, 1, dsts, MPI_UNWEIGHTED, &
                                      MPI_INFO_NULL, .false., dg, ierr); gcalls(1) = gcalls(1) + 1
  rbuf = -1
  call MPI_NEIGHBOR_ALLGATHER(sbuf, 1, MPI_INTEGER, rbuf, 1, MPI_INTEGER, dg, ierr); gcalls(2) = gcalls(2) + 1
  if (rbuf /= 100 + left) call fail('neighbor_allgather')
  call MPI_COMM_FREE(dg, ierr); ncalls(15) = ncalls(15) + 1

  open(10, file=trim(dir)//'/fmanifest-'//char(48 + rank)//'.txt', status='replace')
  do i = 1, NN
    write(10, '(a, 1x, i0)') trim(names(i)), ncalls(i)
  end do
  do i = 1, NGRAPH
    write(10, '(a, 1x, i0)') trim(gnames(i)), gcalls(i)
  end do
  close(10)
  call MPI_FINALIZE(ierr)

contains
  subroutine fail(what)
    character(len=*), intent(in) :: what
    write(0, *) 'fortran_app: rank ', rank, ': wrong result: ', what
    call MPI_ABORT(MPI_COMM_WORLD, 1, ierr)
  end subroutine fail
end program fortran_app
