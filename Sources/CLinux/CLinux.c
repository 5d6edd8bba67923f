#define _GNU_SOURCE
#include "CLinux.h"

int clinux_open(const char *path, int flags, mode_t mode) {
    return open(path, flags, mode);
}

int clinux_fcntl_int(int fd, int cmd, int arg) {
    return fcntl(fd, cmd, arg);
}

int clinux_fcntl_get(int fd, int cmd) {
    return fcntl(fd, cmd);
}

int clinux_pipe2(int fds[2], int flags) {
    return pipe2(fds, flags);
}

int clinux_set_thread_name(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

#include <sys/timex.h>

int clinux_clock_synchronized(void) {
    struct timex tx = {0};
    int state = adjtimex(&tx);
    if (state == -1) return -1;
    return (state == TIME_ERROR || (tx.status & STA_UNSYNC)) ? 0 : 1;
}
