/* The process's end. main sets it after the script has run, just before lua_close: the
 * finalisers that give back memory a block at a time may then leave it to the process's exit
 * (the groups' durations of a 302 MB import are 49k blocks; freeing them one by one was 15-20
 * ms of the run), and main's Lua allocator then frees nothing (lua_close's object by object
 * frees). Memory only: every other finaliser (files, locks, stages) runs as always.
 * Never under AddressSanitizer, whose leak check wants every block freed. */
#ifndef PS_LIFETIME_H
#define PS_LIFETIME_H

void ps_set_exiting(void);
/* 1 when the blocks of memory about to be freed one by one may be left to the exit. */
int ps_exiting(void);

#endif
