/* The trivial program the process benchmarks start: it exits at once, so
 * that what is timed is the kernel's work (fork, exec, the dynamic loader
 * for the dynamic build) and not the program's. Built twice by build.rs:
 * statically and dynamically linked against the C library. */
int main(void) { return 0; }
