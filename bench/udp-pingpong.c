/* udp-pingpong: the plainest UDP ping-pong over 127.0.0.1, a second peer for
 * bench/vs-sockperf.sh beside sockperf (see bench/README.md).
 *
 * One process, two threads, two UDP sockets on 127.0.0.1 connected to each
 * other (as latscope's UDP probe connects its two):
 *   server: pinned to CPU B, SCHED_FIFO P; blocking recv() -> send() of the
 *           same bytes straight back, nothing else.
 *   client: pinned to CPU A, SCHED_FIFO P; sleeps to an absolute grid point
 *           (clock_nanosleep CLOCK_MONOTONIC TIMER_ABSTIME, every PERIOD us,
 *           the first one period after the start), then
 *             t0 = clock_gettime(CLOCK_MONOTONIC); send(); recv() the echo
 *             (blocking); t1 = clock_gettime(CLOCK_MONOTONIC); rtt = t1 - t0
 *           into a preallocated array. A wake-up that is already past later
 *           grid points skips them (counted), as latscope's sender does; a
 *           missed cycle is not sent late.
 * One untimed exchange before the first grid point warms the path up.
 * mlockall; /dev/cpu_dma_latency held at 0 for the whole run unless -n.
 *
 * Output on stdout: '#' lines (settings and a summary), then one RTT per line
 * in ns, in send order. Errors go to stderr, exit status 1. If an echo does
 * not come back within 5 s of the end of the run, the program says so and
 * exits 1 (the client would otherwise block for ever).
 *
 * Build: cc -O2 -Wall -Wextra -pthread -o udp-pingpong udp-pingpong.c
 * Usage: udp-pingpong [-a CPU] [-b CPU] [-p PRIO] [-i PERIOD_US] [-m PAYLOAD]
 *                     [-t SECONDS] [-n]
 *   defaults: -a 0 -b 1 -p 95 -i 10000 -m 64 -t 5
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_PAYLOAD 65000
#define SEQ_BYTES 8 /* the client writes its sequence number in the first bytes */

static const char *prog = "udp-pingpong";

static void die(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: error: ", prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

static long parse_num(const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        die("%s takes a whole number from %ld to %ld, not '%s'", opt, lo, hi, s);
    return v;
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static struct timespec to_ts(uint64_t ns)
{
    struct timespec t = { .tv_sec = (time_t)(ns / 1000000000ull),
                          .tv_nsec = (long)(ns % 1000000000ull) };
    return t;
}

struct shared {
    int cpu_a, cpu_b;
    long payload;
    uint64_t period_ns;
    size_t count;      /* grid points in the run */
    int client_fd, server_fd;
    uint64_t *rtt;     /* count entries; 0 = that grid point was skipped */
    size_t sent, skipped, overruns;
    const char *client_err; /* set by a thread that failed */
    int client_errno;
    const char *server_err;
    int server_errno;
    int client_cpu_seen, server_cpu_seen;
};

static void *server(void *arg)
{
    struct shared *s = arg;
    static char buf[MAX_PAYLOAD];
    s->server_cpu_seen = sched_getcpu();
    for (;;) {
        ssize_t n = recv(s->server_fd, buf, sizeof buf, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            s->server_errno = errno;
            s->server_err = "server recv";
            return NULL;
        }
        if (send(s->server_fd, buf, (size_t)n, 0) < 0) {
            s->server_errno = errno;
            s->server_err = "server send";
            return NULL;
        }
    }
}

/* One send and its echo; returns the RTT in ns, 0 after an error. */
static uint64_t exchange(struct shared *s, char *out, char *in, uint64_t seq)
{
    memcpy(out, &seq, SEQ_BYTES);
    uint64_t t0 = now_ns();
    if (send(s->client_fd, out, (size_t)s->payload, 0) < 0) {
        s->client_errno = errno;
        s->client_err = "client send";
        return 0;
    }
    ssize_t n;
    do
        n = recv(s->client_fd, in, (size_t)s->payload + 1, 0);
    while (n < 0 && errno == EINTR);
    uint64_t t1 = now_ns();
    if (n < 0) {
        s->client_errno = errno;
        s->client_err = "client recv";
        return 0;
    }
    if (n != s->payload || memcmp(in, out, SEQ_BYTES) != 0) {
        s->client_errno = 0;
        s->client_err = "the echo is not the datagram just sent (wrong length or sequence number)";
        return 0;
    }
    return t1 - t0 ? t1 - t0 : 1;
}

static void *client(void *arg)
{
    struct shared *s = arg;
    static char out[MAX_PAYLOAD], in[MAX_PAYLOAD + 1];
    s->client_cpu_seen = sched_getcpu();
    memset(out, 0xa5, sizeof out);

    if (!exchange(s, out, in, UINT64_MAX)) /* warm-up, not recorded */
        return NULL;

    uint64_t next = now_ns() + s->period_ns;
    for (size_t i = 0; i < s->count;) {
        struct timespec ts = to_ts(next);
        int rc;
        while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
            ;
        if (rc) {
            s->client_errno = rc;
            s->client_err = "clock_nanosleep";
            return NULL;
        }
        uint64_t now = now_ns();
        if (now >= next + s->period_ns) { /* woke past later grid points: skip them */
            uint64_t missed = (now - next) / s->period_ns;
            if (missed > s->count - i - 1)
                missed = s->count - i - 1;
            s->overruns++;
            s->skipped += missed;
            i += missed;
            next += missed * s->period_ns;
        }
        uint64_t rtt = exchange(s, out, in, i);
        if (!rtt)
            return NULL;
        s->rtt[i++] = rtt;
        s->sent++;
        next += s->period_ns;
    }
    return NULL;
}

static int udp_socket(struct sockaddr_in *addr)
{
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        die("socket(AF_INET, SOCK_DGRAM): %s", strerror(errno));
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr->sin_port = 0; /* a free port */
    if (bind(fd, (struct sockaddr *)addr, sizeof *addr) < 0)
        die("bind 127.0.0.1:0: %s", strerror(errno));
    socklen_t len = sizeof *addr;
    if (getsockname(fd, (struct sockaddr *)addr, &len) < 0)
        die("getsockname: %s", strerror(errno));
    return fd;
}

static void thread_attr(pthread_attr_t *attr, int cpu, int prio, const char *who)
{
    int rc;
    cpu_set_t set;
    struct sched_param sp = { .sched_priority = prio };
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if ((rc = pthread_attr_init(attr)) ||
        (rc = pthread_attr_setstacksize(attr, 256 * 1024)) ||
        (rc = pthread_attr_setinheritsched(attr, PTHREAD_EXPLICIT_SCHED)) ||
        (rc = pthread_attr_setschedpolicy(attr, SCHED_FIFO)) ||
        (rc = pthread_attr_setschedparam(attr, &sp)) ||
        (rc = pthread_attr_setaffinity_np(attr, sizeof set, &set)))
        die("%s thread attributes (CPU %d, SCHED_FIFO %d): %s", who, cpu, prio, strerror(rc));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: %s [-a CPU] [-b CPU] [-p PRIO] [-i PERIOD_US] [-m PAYLOAD] [-t SECONDS] [-n]\n"
            "  -a CPU        client's CPU (default 0)\n"
            "  -b CPU        server's (echo's) CPU (default 1)\n"
            "  -p PRIO       SCHED_FIFO priority of both threads, 1-99 (default 95)\n"
            "  -i PERIOD_US  one datagram every PERIOD_US us (default 10000)\n"
            "  -m PAYLOAD    UDP payload bytes, %d-%d (default 64)\n"
            "  -t SECONDS    length of the run (default 5)\n"
            "  -n            do not hold /dev/cpu_dma_latency at 0\n"
            "stdout: '#' lines, then one round-trip time per line in ns.\n",
            prog, SEQ_BYTES, MAX_PAYLOAD);
}

int main(int argc, char **argv)
{
    struct shared s;
    memset(&s, 0, sizeof s);
    int prio = 95, hold_dma = 1;
    long period_us = 10000, seconds = 5;
    s.cpu_a = 0;
    s.cpu_b = 1;
    s.payload = 64;
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu < 1)
        ncpu = CPU_SETSIZE;

    int opt;
    while ((opt = getopt(argc, argv, "a:b:p:i:m:t:nh")) != -1) {
        switch (opt) {
        case 'a': s.cpu_a = (int)parse_num("-a", optarg, 0, ncpu - 1); break;
        case 'b': s.cpu_b = (int)parse_num("-b", optarg, 0, ncpu - 1); break;
        case 'p': prio = (int)parse_num("-p", optarg, 1, 99); break;
        case 'i': period_us = parse_num("-i", optarg, 1, 60 * 1000000L); break;
        case 'm': s.payload = parse_num("-m", optarg, SEQ_BYTES, MAX_PAYLOAD); break;
        case 't': seconds = parse_num("-t", optarg, 1, 86400); break;
        case 'n': hold_dma = 0; break;
        case 'h': usage(); return 0;
        default: usage(); return 1;
        }
    }
    if (optind != argc) {
        usage();
        die("unexpected argument '%s'", argv[optind]);
    }
    if (s.cpu_a == s.cpu_b)
        die("-a and -b must be different CPUs (both %d)", s.cpu_a);
    s.period_ns = (uint64_t)period_us * 1000u;
    s.count = (size_t)((uint64_t)seconds * 1000000000ull / s.period_ns);
    if (s.count < 1)
        die("-t %ld s is shorter than one period of %ld us", seconds, period_us);

    int dma_fd = -1;
    if (hold_dma) {
        int32_t zero = 0;
        dma_fd = open("/dev/cpu_dma_latency", O_WRONLY);
        if (dma_fd < 0)
            die("cannot open /dev/cpu_dma_latency: %s (run as root, or -n not to hold it)",
                strerror(errno));
        if (write(dma_fd, &zero, sizeof zero) != sizeof zero)
            die("cannot write 0 to /dev/cpu_dma_latency: %s", strerror(errno));
        /* kept open until exit: the request lasts as long as the fd */
    }
    if (mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
        die("mlockall: %s (run as root)", strerror(errno));
    s.rtt = calloc(s.count, sizeof *s.rtt);
    if (!s.rtt)
        die("cannot allocate %zu samples", s.count);
    memset(s.rtt, 0, s.count * sizeof *s.rtt); /* touch every page now */

    struct sockaddr_in ca, sa;
    s.client_fd = udp_socket(&ca);
    s.server_fd = udp_socket(&sa);
    if (connect(s.client_fd, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        connect(s.server_fd, (struct sockaddr *)&ca, sizeof ca) < 0)
        die("connect the two sockets: %s", strerror(errno));

    pthread_attr_t attr_c, attr_s;
    pthread_t tid_c, tid_s;
    int rc;
    thread_attr(&attr_s, s.cpu_b, prio, "server");
    thread_attr(&attr_c, s.cpu_a, prio, "client");
    if ((rc = pthread_create(&tid_s, &attr_s, server, &s)))
        die("cannot start the server thread on CPU %d at SCHED_FIFO %d: %s%s", s.cpu_b, prio,
            strerror(rc), rc == EPERM ? " (run as root)" : rc == EINVAL ? " (CPU offline?)" : "");
    if ((rc = pthread_create(&tid_c, &attr_c, client, &s)))
        die("cannot start the client thread on CPU %d at SCHED_FIFO %d: %s%s", s.cpu_a, prio,
            strerror(rc), rc == EPERM ? " (run as root)" : rc == EINVAL ? " (CPU offline?)" : "");

    /* Wait for the client, at most the run's length + 5 s (a lost echo would
     * block it for ever). The server thread is never joined: it stays
     * blocked in recv() until the process exits. */
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += seconds + 5;
    if ((rc = pthread_timedjoin_np(tid_c, NULL, &deadline))) {
        if (rc == ETIMEDOUT)
            die("the client did not finish within %ld s (an echo lost? server: %s)", seconds + 5,
                s.server_err ? s.server_err : "no error");
        die("pthread_timedjoin_np: %s", strerror(rc));
    }
    if (s.server_err)
        die("%s: %s", s.server_err, strerror(s.server_errno));
    if (s.client_err)
        die("%s%s%s", s.client_err, s.client_errno ? ": " : "",
            s.client_errno ? strerror(s.client_errno) : "");
    if (s.client_cpu_seen != s.cpu_a || s.server_cpu_seen != s.cpu_b)
        die("threads ran on CPUs %d (client) and %d (server), not %d and %d",
            s.client_cpu_seen, s.server_cpu_seen, s.cpu_a, s.cpu_b);
    if (!s.sent)
        die("no round trip was measured");

    uint64_t *sorted = malloc(s.sent * sizeof *sorted);
    if (!sorted)
        die("cannot allocate %zu samples", s.sent);
    size_t k = 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < s.count; i++)
        if (s.rtt[i]) {
            sorted[k++] = s.rtt[i];
            sum += s.rtt[i];
        }
    qsort(sorted, k, sizeof *sorted, cmp_u64);
    double median = k % 2 ? (double)sorted[k / 2]
                          : ((double)sorted[k / 2 - 1] + (double)sorted[k / 2]) / 2.0;

    printf("# udp-pingpong: client CPU %d, server CPU %d, SCHED_FIFO %d, payload %ld B, "
           "period %ld us, %ld s\n", s.cpu_a, s.cpu_b, prio, s.payload, period_us, seconds);
    printf("# ports: client 127.0.0.1:%u, server 127.0.0.1:%u (connected)\n",
           ntohs(ca.sin_port), ntohs(sa.sin_port));
    printf("# dma_latency_held: %d\n", hold_dma);
    printf("# grid_points: %zu, sent: %zu, skipped: %zu, overruns: %zu\n",
           s.count, s.sent, s.skipped, s.overruns);
    printf("# rtt_ns: n %zu, min %llu, median %.1f, mean %.1f, max %llu\n", k,
           (unsigned long long)sorted[0], median, (double)sum / (double)k,
           (unsigned long long)sorted[k - 1]);
    for (size_t i = 0; i < s.count; i++)
        if (s.rtt[i])
            printf("%llu\n", (unsigned long long)s.rtt[i]);
    if (fflush(stdout) != 0 || ferror(stdout))
        die("writing the results: %s", strerror(errno));
    if (dma_fd >= 0)
        close(dma_fd);
    return 0;
}
