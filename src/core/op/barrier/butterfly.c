/* mpitempo: butterfly barrier (Brooks 1986; class O(log2 P) without broadcast
 * in Hoefler et al. 2005). For P a power of two: in round k = 0 .. log2 P - 1
 * rank r exchanges a message with r XOR 2^k; after the last round every rank
 * has heard, directly or not, from every other.
 * Non-power-of-two P (our choice): the butterfly runs on Q = the next power of
 * two >= P identities; identity v >= P is virtual and played by rank v - Q/2
 * (which exists and is real, since P > Q/2). A rank plays its own identity
 * and, if it hosts one, its virtual identity, round by round: it posts both
 * exchanges of round k (non-blocking) and waits for both before round k + 1,
 * so a virtual identity arrives when its host arrives and the butterfly's
 * argument holds for all Q identities. An exchange between a rank and its own
 * virtual identity (the last round) needs no message. Tags carry the round
 * and whether the identities are in the upper half, so two exchanges between
 * the same two ranks in one round never match each other.
 * LogP (our derivation): log2 Q rounds of max(t_r, t_s), a host of a virtual
 * identity paying one more o_s and o_r per round: rt = log2 Q (o_s + L + o_r)
 * for P = Q, and up to log2 Q (2 o_s + L + 2 o_r) otherwise. */
#include "op/barrier/barrier.h"

static int call(mt_op_args_t *a)
{
    mt_bar_t *b = mt_bar_begin(a);
    int r = b->rank, p = b->size, q = 1, rc;
    while (q < p) q *= 2;
    int h = q / 2;
    int ids[2] = {r, -1}, nid = 1;
    if (r < h && r + h >= p) ids[nid++] = r + h; /* my virtual identity */
    for (int m = 1, k = 0; m < q; m <<= 1, k++) {
        int nreq = 0;
        for (int i = 0; i < nid; i++) {
            int me = ids[i], partner = me ^ m;
            if (i == 0 && nid == 2 && partner == ids[1]) continue; /* myself */
            if (i == 1 && partner == ids[0]) continue;
            int host = partner < p ? partner : partner - h;
            int tag = 2 * (1 + k) + (me >= h ? 1 : 0);
            b->rbuf[nreq / 2] = -1;
            if ((rc = MPI_Irecv(&b->rbuf[nreq / 2], 1, MPI_INT, host, tag, b->comm,
                                &b->req[nreq])) != MPI_SUCCESS)
                return rc;
            if ((rc = MPI_Isend(&b->seq, 1, MPI_INT, host, 2 * (1 + k) + (partner >= h ? 1 : 0), b->comm,
                                &b->req[nreq + 1])) != MPI_SUCCESS)
                return rc;
            b->sent++;
            nreq += 2;
        }
        if ((rc = MPI_Waitall(nreq, b->req, MPI_STATUSES_IGNORE)) != MPI_SUCCESS) return rc;
        for (int i = 0; i < nreq / 2; i++) {
            b->received++;
            if (b->rbuf[i] != b->seq) b->mismatched++;
        }
    }
    return MPI_SUCCESS;
}

MT_BAR_OP(mt_op_bar_butterfly, "butterfly", "butterfly barrier (point-to-point; non-power-of-two P by virtual ranks)",
          1, 0, NULL, 0);
