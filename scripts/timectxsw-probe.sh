#!/usr/bin/env bash
# Measure, on this machine, what E3's model of the `contextswitch` benchmark's `timectxsw` loop
# rests on (docs/costs.md §12.2): the syscalls of its spin and retry passes, and the shape of
# its handshake (does the spinner always switch out? how often does the writer retry? how
# often does the sleeper's CPU enter an idle state?).
#
#   scripts/timectxsw-probe.sh [ITERATIONS=200000]
#
# Needs a C compiler (cc) and two CPUs. Prints the syscall costs with both tasks' CPU pinned
# to CPU 0, then the handshake pinned across CPUs 0 and 1, then both tasks on CPU 0. The loop
# is written here from the benchmark's description (each side spins on sched_yield and a
# FUTEX_WAIT that fails until the other has written the shared word, and retries FUTEX_WAKE
# until the other is queued); it counts the retries and reads getrusage and the cpuidle usage
# counters around the run. Nothing is written outside a temporary directory.
set -euo pipefail
iters=${1:-200000}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/probe.c" <<'EOF'
#define _GNU_SOURCE
#include <linux/futex.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Shared between the two processes: the word and the counters. */
struct page {
    volatile int word;
    long wait_fails[2], wake_fails[2], nvcsw[2], nivcsw[2];
};

static long futex(volatile int *w, int op, int val) {
    return syscall(SYS_futex, w, op, val, NULL, NULL, 0);
}

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static void pin(int cpu) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static long idle_entries(int cpu) {
    long sum = 0;
    for (int state = 0; state < 16; state++) {
        char path[96];
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/cpuidle/state%d/usage", cpu, state);
        FILE *f = fopen(path, "r");
        if (!f) break;
        long n = 0;
        if (fscanf(f, "%ld", &n) == 1) sum += n;
        fclose(f);
    }
    return sum;
}

/* One side of the loop: wait for `mine` to be replaced, write `theirs`, wake the other. */
static void side(struct page *p, int me, int first_wait, int mine, int theirs, int n) {
    for (int i = 0; i < n; i++) {
        if (first_wait || i > 0) {
            sched_yield();
            while (futex(&p->word, FUTEX_WAIT, mine)) {
                p->wait_fails[me]++;
                sched_yield();
            }
        }
        p->word = theirs;
        while (!futex(&p->word, FUTEX_WAKE, 1)) {
            p->wake_fails[me]++;
            sched_yield();
        }
    }
}

static void handshake(int n, int cpu_a, int cpu_b) {
    struct page *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(p, 0, sizeof *p);
    p->word = 1;
    long idle0 = idle_entries(cpu_a) + (cpu_b != cpu_a ? idle_entries(cpu_b) : 0);
    pid_t child = fork();
    if (child == 0) {
        pin(cpu_b);
        side(p, 1, 1, 1, 2, n);
        struct rusage r;
        getrusage(RUSAGE_SELF, &r);
        p->nvcsw[1] = r.ru_nvcsw;
        p->nivcsw[1] = r.ru_nivcsw;
        _exit(0);
    }
    pin(cpu_a);
    usleep(10000);
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    double t0 = now_ns();
    /* The parent writes first, then waits for the child's answer. */
    for (int i = 0; i < n; i++) {
        p->word = 1;
        while (!futex(&p->word, FUTEX_WAKE, 1)) {
            p->wake_fails[0]++;
            sched_yield();
        }
        sched_yield();
        while (futex(&p->word, FUTEX_WAIT, 2)) {
            p->wait_fails[0]++;
            sched_yield();
        }
    }
    double dt = now_ns() - t0;
    getrusage(RUSAGE_SELF, &r1);
    waitpid(child, NULL, 0);
    long idle = idle_entries(cpu_a) + (cpu_b != cpu_a ? idle_entries(cpu_b) : 0) - idle0;
    printf("handshake on CPUs %d,%d: %.0f ns per round trip, %.1f ns per switch as timectxsw counts (round trip / 4)\n",
           cpu_a, cpu_b, dt / n, dt / n / 4);
    printf("  per round trip, writer (parent) / answerer (child): voluntary switches %.3f / %.3f, involuntary %.3f / %.3f\n",
           (r1.ru_nvcsw - r0.ru_nvcsw) / (double)n, p->nvcsw[1] / (double)n,
           (r1.ru_nivcsw - r0.ru_nivcsw) / (double)n, p->nivcsw[1] / (double)n);
    printf("  per round trip: failed FUTEX_WAIT passes %.2f / %.2f, failed FUTEX_WAKE retries %.2f / %.2f, cpuidle entries %.3f\n",
           p->wait_fails[0] / (double)n, p->wait_fails[1] / (double)n,
           p->wake_fails[0] / (double)n, p->wake_fails[1] / (double)n, idle / (double)n);
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200000;
    int m = 10 * n;
    volatile int *w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    *w = 1;
    pin(0);
    double t = now_ns();
    for (int i = 0; i < m; i++) syscall(SYS_getppid);
    printf("null syscall (getppid): %.1f ns\n", (now_ns() - t) / m);
    t = now_ns();
    for (int i = 0; i < m; i++) sched_yield();
    printf("sched_yield, nothing else runnable: %.1f ns\n", (now_ns() - t) / m);
    t = now_ns();
    for (int i = 0; i < m; i++) futex(w, FUTEX_WAIT, 0);
    printf("FUTEX_WAIT on a shared word that changed (EAGAIN): %.1f ns\n", (now_ns() - t) / m);
    t = now_ns();
    for (int i = 0; i < m; i++) futex(w, FUTEX_WAKE, 1);
    printf("FUTEX_WAKE on a shared word, no waiter: %.1f ns\n", (now_ns() - t) / m);
    handshake(n, 0, 1);
    handshake(n, 0, 0);
    return 0;
}
EOF
cc -O2 -Wall -o "$dir/probe" "$dir/probe.c"
uname -r
"$dir/probe" "$iters"
