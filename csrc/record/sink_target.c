/*
 * sink_target.c: where the line sink (sink.c) writes, and where notices go:
 * descriptors of the module's own, so that O_NONBLOCK, a close or a
 * replaced stderr are ours alone, opened without waiting; and the module's
 * own threads (every signal blocked; the module pinned in memory when one
 * cannot be joined).
 *
 *  - Pipes, FIFOs and terminals are opened anew non-blocking
 *    (/proc/self/fd/N), sockets are written with MSG_DONTWAIT |
 *    MSG_NOSIGNAL, a path is opened with O_NONBLOCK (a FIFO with no reader
 *    is refused at once) in a helper thread that is waited for at most 2 s
 *    (a stalled file system). So only a write to a regular file on a
 *    stalled disk can hold the writer, and then only the writer.
 *  - Notices (sink.c's one-time messages, written by its writer thread) go
 *    to fd 2, looked up at each notice, to a descriptor of the module's own
 *    (pp_notices_file, pp_notices_fd), or nowhere.
 */
#define _GNU_SOURCE
#include "pp_internal.h"
#include "sink_internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define OPEN_TIMEOUT_MS 2000u

/* ---- the module's own threads --------------------------------------------- */
void pp_pin_module(void) {
  Dl_info di;
  if (dladdr((void *)&pp_pin_module, &di) && di.dli_fname)
    (void)dlopen(di.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
}

int pp_own_thread(pthread_t *t, void *(*fn)(void *), void *arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(t, NULL, fn, arg);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* ---- targets ------------------------------------------------------------- */
void pp_target_name_fd(pp_target *t, int fd) {
  const char *what = fd == 2 ? " (stderr)" : fd == 1 ? " (stdout)" : "";
  snprintf(t->name, sizeof t->name, "fd %d%s", fd, what);
}

int pp_target_from_fd(int fd, pp_target *t) {
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0)
    return -1;
  if (S_ISSOCK(st.st_mode)) {
    t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    t->kind = PP_TARGET_SOCK;
  } else if (S_ISFIFO(st.st_mode) || (S_ISCHR(st.st_mode) && isatty(fd))) {
    /* A description of our own, so O_NONBLOCK is ours alone. */
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    t->fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    t->kind = PP_TARGET_STREAM;
    if (t->fd < 0) {
      /* no /proc, or no reader: the same description; only the writer
       * thread can then wait on it */
      t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
      t->kind = PP_TARGET_BLOCKING;
    }
  } else {
    t->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    t->kind = PP_TARGET_FILE;
  }
  return t->fd < 0 ? -1 : 0;
}

typedef struct {
  char *path;
  int fd, err, done, abandoned;
} open_job;

static pthread_mutex_t open_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t open_cond;
static pthread_once_t open_once = PTHREAD_ONCE_INIT;
static void open_init(void) { pp_cond_init(&open_cond); }

static void *open_main(void *p) {
  open_job *j = p;
  int fd = open(j->path, O_WRONLY | O_CREAT | O_APPEND | O_NONBLOCK |
                             O_CLOEXEC | O_NOCTTY,
                0644);
  int e = errno;
  pthread_mutex_lock(&open_lock);
  if (j->abandoned) {
    pthread_mutex_unlock(&open_lock);
    if (fd >= 0)
      close(fd);
    free(j->path);
    free(j);
    return NULL;
  }
  j->fd = fd;
  j->err = e;
  j->done = 1;
  pthread_cond_broadcast(&open_cond);
  pthread_mutex_unlock(&open_lock);
  return NULL;
}

/* open() in a thread of ours, waited for at most timeout_ms: a FIFO with no
 * reader fails at once (O_NONBLOCK); a stalled file system fails with
 * ETIMEDOUT instead of holding the caller. */
static int open_bounded(const char *path, unsigned timeout_ms) {
  pthread_once(&open_once, open_init);
  open_job *j = calloc(1, sizeof *j);
  if (!j || !(j->path = strdup(path))) {
    free(j);
    errno = ENOMEM;
    return -1;
  }
  pthread_t t;
  if (pp_own_thread(&t, open_main, j) != 0) {
    free(j->path);
    free(j);
    errno = EAGAIN;
    return -1;
  }
  struct timespec ts;
  pp_abs_time(&ts, pp_mono_ns() + (uint64_t)timeout_ms * 1000000ull);
  pthread_mutex_lock(&open_lock);
  while (!j->done)
    if (pthread_cond_timedwait(&open_cond, &open_lock, &ts) == ETIMEDOUT)
      break;
  if (!j->done) {
    j->abandoned = 1; /* the thread closes what it opens, and frees j */
    pthread_mutex_unlock(&open_lock);
    pthread_detach(t);
    pp_pin_module();
    errno = ETIMEDOUT;
    return -1;
  }
  pthread_mutex_unlock(&open_lock);
  pthread_join(t, NULL);
  int fd = j->fd, e = j->err;
  free(j->path);
  free(j);
  errno = e;
  return fd;
}

int pp_target_from_path(const char *path, pp_target *t) {
  int fd = open_bounded(path, OPEN_TIMEOUT_MS);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  t->fd = fd;
  t->kind = S_ISREG(st.st_mode) ? PP_TARGET_FILE
            : S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode) ? PP_TARGET_STREAM
                                                          : PP_TARGET_FILE;
  snprintf(t->name, sizeof t->name, "%s", path);
  return 0;
}

ssize_t pp_target_write(const pp_target *t, const char *p, size_t n) {
  if (t->kind == PP_TARGET_SOCK)
    return send(t->fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
  return write(t->fd, p, n);
}

/* ---- the notices' target --------------------------------------------------- */
/* Where the notices go: fd 2, looked up at each notice (a redirected stderr
 * is followed), a descriptor of the module's own (a file opened by path, or
 * a copy of the caller's descriptor), or nowhere (-1). notice_lock is a
 * leaf, held to switch targets and, for one notice, to take a descriptor of
 * one's own for it (a dup, or a non-blocking reopen): never across a write. */
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
static int notice_fd = 2;
static int notice_owned; /* notice_fd is the module's: closed when replaced */

void pp_notice_say(const char *msg) {
  pp_target t = {.fd = -1};
  pthread_mutex_lock(&notice_lock);
  int rc = pp_target_from_fd(notice_fd, &t);
  pthread_mutex_unlock(&notice_lock);
  if (rc != 0)
    return;
  size_t n = strlen(msg), off = 0;
  for (int tries = 0; off < n && tries < 3; tries++) {
    ssize_t w = pp_target_write(&t, msg + off, n - off);
    if (w > 0) {
      off += (size_t)w;
    } else if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd pf = {t.fd, POLLOUT, 0};
      poll(&pf, 1, SLICE_MS);
    } else if (!(w < 0 && errno == EINTR)) {
      break;
    }
  }
  close(t.fd);
}

/* Notices already raised go to the target in effect when they were raised
 * (flushed first, at most GRACE_MS); the new one takes the rest. */
static void notices_to(int fd, int owned) {
  pp_flush(GRACE_MS);
  pthread_mutex_lock(&notice_lock);
  int old = notice_owned ? notice_fd : -1;
  notice_fd = fd;
  notice_owned = owned;
  pthread_mutex_unlock(&notice_lock);
  if (old >= 0)
    close(old);
}

PP_EXPORT int pp_notices_fd(int fd) {
  if (fd < 0 || fd == 2) {
    notices_to(fd < 0 ? -1 : 2, 0);
    return 0;
  }
  int own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  if (own < 0)
    return -1;
  notices_to(own, 1);
  return 0;
}

PP_EXPORT int pp_notices_file(const char *path) {
  int fd = open_bounded(path, OPEN_TIMEOUT_MS);
  if (fd < 0)
    return -1;
  notices_to(fd, 1);
  return 0;
}

void pp_notices_fini(void) {
  if (notice_owned && notice_fd >= 0)
    close(notice_fd);
  notice_fd = -1;
  notice_owned = 0;
}

void pp_notices_after_fork(void) { pthread_mutex_init(&notice_lock, NULL); }
