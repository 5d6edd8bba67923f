// Linux syscalls that Swift's Glibc module does not export, and wrappers for variadic C calls.
// Keep this tiny: declarations and static inline shims only.
#pragma once

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/// `open(2)` without the variadic mode argument (Swift cannot call variadic C functions).
int clinux_open(const char *path, int flags, mode_t mode);

/// `fcntl(fd, cmd, arg)` with an int argument.
int clinux_fcntl_int(int fd, int cmd, int arg);

/// The calling thread's errno.
static inline int clinux_errno(void) { return errno; }
