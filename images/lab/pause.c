/* The pod sandbox's process for the lab's real kubelets (images/lab/Dockerfile, target
 * pause): it holds the pod's namespaces and does nothing else. Sleeps in pause(), exits 0 on
 * SIGTERM or SIGINT (so stopping a sandbox takes no SIGKILL), and reaps any child that is
 * re-parented to it (it is PID 1 of a pod that shares its PID namespace).
 * Built static by scripts/kubenode/build.sh: gcc -static -O2. `pause -v` prints its version. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION "3.10"

static void on_stop(int sig) {
  (void)sig;
  _exit(0);
}

static void on_child(int sig) {
  int saved = errno;
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
  errno = saved;
}

int main(int argc, char **argv) {
  struct sigaction stop, child;

  if (argc > 1 && strcmp(argv[1], "-v") == 0) {
    printf("pause.c tpc-bench %s\n", VERSION);
    return 0;
  }
  memset(&stop, 0, sizeof stop);
  stop.sa_handler = on_stop;
  memset(&child, 0, sizeof child);
  child.sa_handler = on_child;
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGTERM, &stop, NULL) < 0 || sigaction(SIGINT, &stop, NULL) < 0 ||
      sigaction(SIGCHLD, &child, NULL) < 0) {
    perror("pause: sigaction");
    return 1;
  }
  for (;;) {
    pause();
  }
}
