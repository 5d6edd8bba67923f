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

// Fills `out` from one received message: its size, `MSG_TRUNC`, the `SCM_TIMESTAMPNS` time, and the descriptors a
// peer passed along (closed here).
static void clinux_read_control(struct msghdr *message, ssize_t count, clinux_timestamped_datagram *out) {
    memset(out, 0, sizeof(*out));
    out->count = count;
    out->truncated = (message->msg_flags & MSG_TRUNC) != 0;
    for (struct cmsghdr *cmsg = CMSG_FIRSTHDR(message); cmsg != NULL; cmsg = CMSG_NXTHDR(message, cmsg)) {
        if (cmsg->cmsg_level != SOL_SOCKET) continue;
        if (cmsg->cmsg_type == SCM_TIMESTAMPNS && cmsg->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec stamp;
            memcpy(&stamp, CMSG_DATA(cmsg), sizeof(stamp));
            out->stamped = 1;
            out->seconds = (int64_t)stamp.tv_sec;
            out->nanoseconds = (int64_t)stamp.tv_nsec;
        } else if (cmsg->cmsg_type == SCM_RIGHTS && cmsg->cmsg_len >= CMSG_LEN(0)) {
            size_t descriptors = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < descriptors; i++) {
                int passed;
                memcpy(&passed, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
                close(passed);
                out->closedDescriptors += 1;
            }
        }
    }
}

// Room for the timestamp and a few passed descriptors (closed); more are discarded by the kernel.
typedef union {
    char bytes[CMSG_SPACE(sizeof(struct timespec)) + CMSG_SPACE(8 * sizeof(int))];
    struct cmsghdr align;
} clinux_datagram_control;

int clinux_receive_timestamped_batch(int fd, void *buffers, size_t slot, unsigned int count,
                                     clinux_timestamped_datagram *out) {
    if (count == 0) return 0;
    if (count > CLINUX_DATAGRAM_BATCH_MAX) count = CLINUX_DATAGRAM_BATCH_MAX;
    struct mmsghdr messages[CLINUX_DATAGRAM_BATCH_MAX];
    struct iovec iovs[CLINUX_DATAGRAM_BATCH_MAX];
    clinux_datagram_control controls[CLINUX_DATAGRAM_BATCH_MAX];
    memset(messages, 0, sizeof(struct mmsghdr) * count);
    for (unsigned int i = 0; i < count; i++) {
        iovs[i].iov_base = (char *)buffers + (size_t)i * slot;
        iovs[i].iov_len = slot;
        messages[i].msg_hdr.msg_iov = &iovs[i];
        messages[i].msg_hdr.msg_iovlen = 1;
        messages[i].msg_hdr.msg_control = controls[i].bytes;
        messages[i].msg_hdr.msg_controllen = sizeof(controls[i].bytes);
    }
    int received;
    do {
        received = recvmmsg(fd, messages, count, MSG_DONTWAIT | MSG_CMSG_CLOEXEC, NULL);
    } while (received < 0 && errno == EINTR);
    if (received < 0) return -1;
    for (int i = 0; i < received; i++) {
        clinux_read_control(&messages[i].msg_hdr, (ssize_t)messages[i].msg_len, &out[i]);
        // A zero-length message is the end of the stream: the kernel repeats it for every slot left, so stop here.
        if (messages[i].msg_len == 0) return i + 1;
    }
    return received;
}

clinux_timestamped_datagram clinux_receive_timestamped(int fd, void *buffer, size_t length) {
    clinux_timestamped_datagram out;
    memset(&out, 0, sizeof(out));
    struct iovec iov = { .iov_base = buffer, .iov_len = length };
    clinux_datagram_control control;
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
    clinux_read_control(&message, count, &out);
    return out;
}
