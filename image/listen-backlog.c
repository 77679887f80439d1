/*
 * LD_PRELOAD for QEMU when it forwards a host port to the guest (the image
 * tool's --port, bench/kvstore.sh): raises the backlog of listen() to at
 * least 128. Built on first use by image/src/backlog.rs.
 *
 * QEMU's user networking (libslirp 4.7) listens on a hostfwd port with a
 * backlog of 1. redis-benchmark opens its 50 connections at once, so the
 * host kernel drops most handshakes and the clients stall for seconds in SYN
 * retransmission (or are reset), whichever guest is behind the port. Raising
 * the backlog takes the host side out of the measurement for both guests.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/socket.h>

int listen(int fd, int backlog)
{
    static int (*next)(int, int);
    if (!next)
        next = (int (*)(int, int))dlsym(RTLD_NEXT, "listen");
    return next(fd, backlog < 128 ? 128 : backlog);
}
