/* The online processor cores, asked of the system once a process: sysconf reads
 * /sys/devices/system/cpu/online each time (a file opened, read and closed), and the import
 * asked once a kernel type and text (48 times for one 302 MB import). */
#ifndef PS_CORES_H
#define PS_CORES_H

/* At least 1. */
int ps_online_cores(void);

#endif
