/* The smallest periodic-timer measuring loop: pinned, SCHED_FIFO 95, mlockall,
 * /dev/cpu_dma_latency = 0, absolute clock_nanosleep on CLOCK_MONOTONIC, one
 * clock read per wake-up. A third comparator for bench/min-gap.sh: what the
 * kernel alone gives, with no tool around the loop.
 * Usage: minimal-loop SAMPLES CPU */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
static uint64_t ns(struct timespec t){return (uint64_t)t.tv_sec*1000000000ull+t.tv_nsec;}
int main(int argc,char**argv){
  int n=atoi(argv[1]); int cpu=atoi(argv[2]);
  mlockall(MCL_CURRENT|MCL_FUTURE);
  int fd=open("/dev/cpu_dma_latency",O_WRONLY); int32_t z=0; write(fd,&z,4);
  cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu,&s); sched_setaffinity(0,sizeof s,&s);
  struct sched_param p={.sched_priority=95}; sched_setscheduler(0,SCHED_FIFO,&p);
  struct timespec next,now; clock_gettime(CLOCK_MONOTONIC,&next);
  uint64_t min=~0ull,sum=0; static uint32_t hist[200];
  for(int i=0;i<n;i++){
    next.tv_nsec+=1000000; if(next.tv_nsec>=1000000000){next.tv_nsec-=1000000000;next.tv_sec++;}
    clock_nanosleep(CLOCK_MONOTONIC,TIMER_ABSTIME,&next,NULL);
    clock_gettime(CLOCK_MONOTONIC,&now);
    uint64_t d=ns(now)-ns(next); if(d<min)min=d; sum+=d; if(d/1000<200)hist[d/1000]++;
  }
  uint32_t below14=0; for(int i=0;i<14;i++) below14+=hist[i];
  printf("C loop: min %.2f us mean %.2f us below14 %u; lowest bins:",min/1e3,sum/1e3/n,below14);
  int shown=0; for(int i=0;i<200&&shown<4;i++) if(hist[i]){printf(" %dus:%u",i,hist[i]);shown++;}
  printf("\n"); return 0;}
