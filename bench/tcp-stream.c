/* A plain TCP stream over loopback, the reference for latscope's
 * net.tcp_throughput_256K in bench/vs-perf-bench.sh: a receiver thread on
 * one CPU reads 256 KiB blocks (each filled before the next) and discards;
 * the sender on another CPU writes 256 KiB blocks with blocking write() for half a second untimed,
 * then for SECONDS timed, and prints the time per block. Both sockets have
 * 256 KiB buffers (set before connect/accept), no TCP_NODELAY.
 *
 * Usage: tcp-stream SENDER_CPU RECEIVER_CPU SECONDS
 * Prints: ns_per_block <float>
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLOCK (256 * 1024)

static int listener;
static int receiver_cpu;

static void pin(int cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) {
        perror("sched_setaffinity");
        exit(1);
    }
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void *receive(void *arg)
{
    (void)arg;
    pin(receiver_cpu);
    int s = accept(listener, NULL, NULL);
    if (s < 0) {
        perror("accept");
        exit(1);
    }
    char *buf = aligned_alloc(4096, BLOCK); /* page-aligned, as iperf3's */
    if (!buf)
        exit(1);
    memset(buf, 0, BLOCK);
    /* Each block is filled before the next starts, a short read going on
     * where it stopped (as iperf3's Nread does): restarting every read at
     * buf moves the kernel copy's destination against its source, and on
     * AMD Zen 3 that can make the copy 16 times slower
     * (rep-movsb-alias.c). */
    for (;;) {
        size_t got = 0;
        ssize_t r = 1;
        while (got < BLOCK && (r = read(s, buf + got, BLOCK - got)) > 0)
            got += (size_t)r;
        if (r <= 0)
            break;
    }
    close(s);
    return NULL;
}

static void write_block(int s, const char *data)
{
    size_t left = BLOCK;
    while (left > 0) {
        ssize_t w = write(s, data + (BLOCK - left), left);
        if (w <= 0) {
            perror("write");
            exit(1);
        }
        left -= (size_t)w;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: tcp-stream SENDER_CPU RECEIVER_CPU SECONDS\n");
        return 2;
    }
    int sender_cpu = atoi(argv[1]);
    receiver_cpu = atoi(argv[2]);
    double seconds = atof(argv[3]);
    int size = BLOCK;

    listener = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(listener, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(listener, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    if (bind(listener, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        getsockname(listener, (struct sockaddr *)&addr, &len) != 0 || listen(listener, 1) != 0) {
        perror("listen");
        return 1;
    }
    pthread_t rx;
    pthread_create(&rx, NULL, receive, NULL);

    pin(sender_cpu);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
    setsockopt(s, SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) != 0) {
        perror("connect");
        return 1;
    }
    char *data = malloc(BLOCK); /* from the heap, as latscope's (see bench/README.md) */
    if (!data)
        return 1;
    memset(data, 9, BLOCK);
    double t0 = now();
    while (now() - t0 < 0.5)
        write_block(s, data);
    long blocks = 0;
    t0 = now();
    double t;
    while ((t = now()) - t0 < seconds) {
        write_block(s, data);
        blocks++;
    }
    printf("ns_per_block %.1f\n", (t - t0) / blocks * 1e9);
    close(s);
    pthread_join(rx, NULL);
    return 0;
}
