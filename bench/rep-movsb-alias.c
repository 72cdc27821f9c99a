/* How fast `rep movsb` copies 64 KiB as a function of where the destination
 * lies relative to the source, modulo 4096. The kernel copies socket data
 * to user buffers with `rep movsb` on CPUs with FSRM; bench/README.md
 * ("tcp") explains why this matters for a TCP stream's figure.
 *
 * Build and run: cc -O2 -o rep-movsb-alias rep-movsb-alias.c && ./rep-movsb-alias
 * Prints one line per distance: dst-src (mod 4096) and the best of 200
 * copies in GB/s.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEN (64 * 1024)

static void copy(void *dst, const void *src, size_t n)
{
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(void)
{
    char *src = aligned_alloc(4096, LEN + 8192);
    char *dst = aligned_alloc(4096, LEN + 8192);
    if (!src || !dst)
        return 1;
    memset(src, 1, LEN + 8192);
    memset(dst, 2, LEN + 8192);
    static const int distance[] = {0, 8, 16, 24, 31, 32, 48, 64, 256, 2048, 4064, 4080, 4088};
    for (size_t i = 0; i < sizeof distance / sizeof distance[0]; i++) {
        int d = distance[i];
        double best = 1e9;
        for (int r = 0; r < 200; r++) {
            double t = now();
            copy(dst + d, src, LEN);
            t = now() - t;
            if (t < best)
                best = t;
        }
        printf("dst-src %4d: %5.1f GB/s\n", d, LEN / best / 1e9);
    }
    return 0;
}
