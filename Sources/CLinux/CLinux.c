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

clinux_timestamped_datagram clinux_receive_timestamped(int fd, void *buffer, size_t length) {
    clinux_timestamped_datagram out;
    memset(&out, 0, sizeof(out));
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    // Room for the timestamp and a few passed descriptors (closed below); more are discarded by the kernel.
    union {
        char bytes[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(8 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr message;
    ssize_t count;
    do {
        memset(&message, 0, sizeof(message));
        message.msg_iov = &iov;
        message.msg_iovlen = 1;
        message.msg_control = control.bytes;
        message.msg_controllen = sizeof(control.bytes);
        count = recvmsg(fd, &message, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    } while (count < 0 && errno == EINTR);
    if (count < 0) {
        out.count = -1;
        out.error = errno;
        return out;
    }
    out.count = count;
    out.truncated = (message.msg_flags & MSG_TRUNC) != 0;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(&message); cmsg != NULL; cmsg = CMSG_NXTHDR(&message, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET) continue;
        if (cmsg->cmsg_type == SCM_TIMESTAMPNS && cmsg->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(cmsg), sizeof(stamp));
            out.stamped = 1;
            out.seconds = (int64_t)stamp.tv_sec;
            out.nanoseconds = (int64_t)stamp.tv_nsec;
        } else if (cmsg->cmsg_type == SCM_RIGHTS && cmsg->cmsg_len >= CMSG_LEN(0)) {
            size_t descriptors = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < descriptors; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
                close(passed);
                out.closedDescriptors += 1;
            }
        }
    }
    return out;
}
