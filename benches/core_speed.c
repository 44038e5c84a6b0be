// core_speed: what the cores of this machine deliver right now, by three fixed loops.
//   gcc -O2 -pthread benches/core_speed.c -o /tmp/core_speed && /tmp/core_speed
// 1. Off the core: two threads read the clock for a second; every gap over 20 us between two
//    reads is time the thread was not running (taken by the host or by other processes).
// 2. Latency-bound: one chain of dependent multiply-adds for 300 ms; follows the clock frequency.
// 3. Throughput-bound: eight independent chains with loads from an 8 KB array for 300 ms; slows
//    further when the core's execution units or L1 are shared (a busy neighbour on the other
//    hardware thread of the same physical core).
// Pin it with `taskset -c N` to check the loops on one vCPU (the two threads of 1 then share it,
// and read about 50% each: read 1 unpinned). PERFORMANCE.md ("The machine") says what it shows.
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static double now_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

struct off { double off_us, total_us; };

static void *read_clock(void *arg) {
    struct off *r = arg;
    double start = now_us(), prev = start;
    while (prev - start < 1e6) {
        double t = now_us();
        if (t - prev > 20) r->off_us += t - prev;
        prev = t;
    }
    r->total_us = prev - start;
    return NULL;
}

int main(void) {
    pthread_t th[2];
    struct off r[2] = {{0, 0}, {0, 0}};
    for (int i = 0; i < 2; i++) pthread_create(&th[i], NULL, read_clock, &r[i]);
    for (int i = 0; i < 2; i++) pthread_join(th[i], NULL);
    printf("off the core: %.1f%% and %.1f%% of a second\n", 100 * r[0].off_us / r[0].total_us,
           100 * r[1].off_us / r[1].total_us);

    volatile unsigned long keep;
    unsigned long x = 1, steps = 0;
    double t0 = now_us();
    while (now_us() - t0 < 3e5) {
        for (int i = 0; i < 10000; i++) x = x * 6364136223846793005UL + 1;
        steps += 10000;
    }
    double latency = steps / (now_us() - t0) / 1e3;
    keep = x;

    unsigned long a[1024], s[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    for (int i = 0; i < 1024; i++) a[i] = i * 7 + 1;
    steps = 0;
    t0 = now_us();
    while (now_us() - t0 < 3e5) {
        for (int i = 0; i < 10000; i++)
            for (int k = 0; k < 8; k++) s[k] = s[k] * 0x9E3779B97F4A7C15UL + a[(i * 8 + k) & 1023];
        steps += 10000;
    }
    double throughput = steps / (now_us() - t0) / 1e3;
    keep = s[0] ^ s[7];
    (void)keep;
    printf("latency-bound %.2f M steps/ms, throughput-bound %.2f M steps/ms\n", latency, throughput);
    return 0;
}
