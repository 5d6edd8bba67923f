#include "CLinux.h"

int clinux_open(const char *path, int flags, mode_t mode) {
    return open(path, flags, mode);
}

int clinux_fcntl_int(int fd, int cmd, int arg) {
    return fcntl(fd, cmd, arg);
}
