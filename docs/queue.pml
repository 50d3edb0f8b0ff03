/*
 * The waiters' queue behind a lock's bell (docs/protocol.md, "One waiter
 * woken per release"), in Promela, checked with spin by TestQueueModel
 * (protocol_spin_test.go).
 *
 * What is modelled is who wakes, not how holders are kept apart: taking
 * the lock is one atomic step here ("holder == 0 -> holder = me"). The
 * queue acts on the bell alone, a file no step of the exclusion protocol
 * reads or writes (docs/protocol.pml models those steps), so the waiter's
 * attempts are the protocol's own, only made at other moments.
 *
 * The kernel's parts, as linux has them:
 *   - the bell is a FIFO each queued waiter holds open read-write and
 *     polls with EPOLLEXCLUSIVE; a byte written into it goes through the
 *     waiters in the order they joined: each one awake on the way gets
 *     the bell on its epoll's ready list, and the first one asleep is
 *     woken, which ends the walk (ep_poll_callback: one woken and not
 *     yet run is off the bell's wait queue, and the walk passes it). The
 *     bell is level: an epoll reports it for as long as it holds a byte;
 *     one woken after another read the byte sleeps on.
 *   - the head is the holder of the head's lock on the bell (an OFD lock;
 *     a flock(2) lock beside it names the head in /proc/locks, and the
 *     two are one step here); the kernel lets go of them when its
 *     process dies, as of every descriptor.
 *   - the head's watch of the lock's names (inotify) and of the holder
 *     (pidfd) queues an event when the holder lets go or dies.
 *   - a waiter behind the head polls a pidfd of the head (the bell's
 *     flock(2) holder, named by /proc/locks) beside the bell: the head's
 *     death wakes every waiter that watches it. Finding the head and
 *     opening its pidfd are two steps (watch[] is set from head, which
 *     may change or die in between; the waiter then looks again).
 *
 * Waiters: NW queued ones (ids 1..NW), each taking the lock ROUNDS times
 * (from the second on, a newcomer that tries before it queues); with
 * OLDW, one more (id NW+1) of an older proclock, which never queues and
 * watches the names all the time; and the first holder (id NW+2), which
 * holds from the start and lets go once.
 *
 * Checked (pan's deadlock check, and LTL_LIVE's <> everyone done under
 * weak fairness):
 *   - no lost wake-up: without any bound on a wait (no TIMEOUTS) and
 *     without a crash, the run never ends with a waiter asleep for ever:
 *     every release wakes someone who takes the lock or passes it on;
 *   - one crash (CRASH: any waiter killed at any step, the holder too)
 *     needs no bound either: without TIMEOUTS, everyone else still gets
 *     the lock, woken by the dead head's pidfd or the second ring of a
 *     leaving head; with TIMEOUTS, as well;
 *   - nobody starves: everyone is done in every fair run.
 *
 * Mutations (each must fail): M_LOOK_FIRST, a new head that looks at the
 * lock before it watches the names; M_RING_FIRST, a leaving head that
 * rings before it lets go of the flock(2) lock; M_NO_HEAD_WATCH, waiters
 * behind that do not watch the head (a dead head then wakes no one: the
 * queue before this change, whose crash cost a bound); M_ONE_RING, a
 * leaving head that rings once (the one woken, killed before it leads,
 * leaves the others asleep behind a head that is gone). M_NO_DEPUTY_RING
 * (a head that led on a death or at a bound rings for no one) needs a
 * second crash to matter and is not checked: a second crash while the
 * queue recovers from a first costs a bound.
 */

#ifndef NW
#define NW 3
#endif
#ifndef ROUNDS
#define ROUNDS 1
#endif
#define MAXB 3		/* the bell's room, in bytes, for the model */
#define FIRST (NW+2)	/* the first holder */
#define NP (NW+3)

byte holder = FIRST;	/* 0: free */
byte head = 0;		/* the bell's flock(2) holder; 0: none */
byte bytes = 0;		/* bytes in the bell */
bool reg[NP];		/* polls the bell (EPOLLEXCLUSIVE) */
bool asleep[NP];	/* in epoll_wait on it */
bool ready[NP];		/* the bell on its epoll's ready list */
bool armed[NP];		/* watches the names and the holder */
bool ev[NP];		/* an event queued on that watch */
byte order[NP];		/* the queue, in the order of joining */
byte njoined = 0;
byte finished = 0;	/* waiters done, or killed */
byte killed = 0;	/* the one crash: its id */
byte k;			/* scratch, in d_steps only */
bool found;
bool gone[NP];		/* done, by itself */
byte watch[NP];		/* the head whose pidfd a waiter behind polls; 0: none */

/* The holder lets go (or dies): every watch of it hears. In a d_step. */
inline letgo() {
	holder = 0;
	k = 1;
	do
	:: k < NP -> if :: armed[k] -> ev[k] = true :: else fi; k++
	:: else -> break
	od;
	k = 0
}

/* A byte into the bell: the walk of the exclusive wake-up. */
inline ring() {
	d_step {
		if
		:: bytes < MAXB ->
			bytes++;
			k = 0;
			do
			:: k < njoined ->
				if
				:: reg[order[k]] ->
					ready[order[k]] = true;
					if
					:: asleep[order[k]] ->
						/* Woken: off the bell's wait queue,
						 * though it has not run yet. */
						asleep[order[k]] = false;
						break
					:: else
					fi
				:: else
				fi;
				k++
			:: else -> break
			od
		:: else	/* full: every poller has a byte to read */
		fi;
		k = 0
	}
}

/* A byte read from the bell, by a poller whose epoll reported it (the
 * bell stays on its ready list while bytes are left). In a d_step. */
inline take(me) {
	bytes--;
	ready[me] = (bytes > 0)
}

/* Leaves the bell's poll (the descriptor closed): out of the queue. */
inline unjoin(me) {
	d_step {
		reg[me] = false; asleep[me] = false; ready[me] = false; watch[me] = 0;
		found = false;
		k = 0;
		do
		:: k < njoined ->
			if :: order[k] == me -> found = true :: else fi;
			if :: found && k + 1 < njoined -> order[k] = order[k+1] :: else fi;
			k++
		:: else -> break
		od;
		if :: found -> njoined--; order[njoined] = 0 :: else fi;
		found = false; k = 0
	}
}

/* What a death lets go of: the kernel's part of every descriptor. */
inline bury(v) {
	if :: head == v -> head = 0 :: else fi;
	armed[v] = false; ev[v] = false;
	reg[v] = false; asleep[v] = false; ready[v] = false;
	if :: holder == v -> letgo() :: else fi;
	finished++
}

proctype waiter(byte me) {
	byte r = 0;
	bool fresh;	/* queued, and not asleep yet */
	{
	do
	:: r == ROUNDS -> break
	:: else ->
		/* The first attempt, before any wait. */
		if
		:: atomic { holder == 0 -> holder = me } -> goto holding
		:: else
		fi;
		/* The first wait joins the queue, and ends at once. */
		d_step {
			reg[me] = true; order[njoined] = me; njoined++; fresh = true;
			if :: bytes > 0 -> ready[me] = true :: else fi
		};
attempt:
		if
		:: atomic { holder == 0 -> holder = me } -> goto holding
		:: else
		fi;
wait:
		if
		:: head == me ->
			/* The head's wait: the names, the holder, the bound. */
			if
			:: atomic { ev[me] -> ev[me] = false }
#ifdef TIMEOUTS
			:: true
#endif
			fi;
			goto attempt
		:: else
		fi;
		/* Behind: lead if there is no head. */
		if
#ifdef M_LOOK_FIRST
		:: atomic { head == 0 -> head = me; reg[me] = false; asleep[me] = false; ready[me] = false } ->
			if
			:: holder != 0 -> armed[me] = true; goto wait
			:: else -> armed[me] = true; goto attempt
			fi
#else
		:: atomic { head == 0 -> head = me; reg[me] = false; asleep[me] = false; ready[me] = false; armed[me] = true } ->
			goto deputy
#endif
		:: else
		fi;
		/* The head is watched by a waiter that has just queued,
		 * and by one that a ring woke and that did not lead (the
		 * new head's deputy), from Wait to Wait. */
		if
		:: fresh || watch[me] != 0 -> fresh = false; goto rewatch
		:: else -> goto sleep
		fi;
rewatch:
		/* Behind a head: watch it (its pid from the kernel's table of
		 * locks, a pidfd of it); the head may change or die between
		 * the two steps, so lead again if there is no head by then. */
		watch[me] = head;
		if
		:: atomic { head == 0 -> head = me; reg[me] = false; ready[me] = false; armed[me] = true } ->
			goto deputy
		:: else
		fi;
		if
		:: watch[me] == 0 -> goto rewatch	/* none named as it looked, one now */
		:: else
		fi;
sleep:
		/* epoll_wait: the bell on the ready list with a byte in it
		 * returns at once; else it sleeps, its list empty. */
		skip;
		d_step {
			if
			:: ready[me] && bytes > 0
			:: else -> ready[me] = false; asleep[me] = true
			fi
		};
sleeping:
		if
#ifndef M_NO_HEAD_WATCH
		:: atomic { killed != 0 && watch[me] == killed ->
			asleep[me] = false; watch[me] = 0 }
			/* The head it watched died (or the process it watched,
			 * a head no longer): lead if no one has; else sleep on,
			 * watching no one (the new head rang for its deputy). */
			if
			:: atomic { head == 0 -> head = me; reg[me] = false; ready[me] = false; armed[me] = true } ->
				goto deputy
			:: else -> goto sleep
			fi
#endif
		:: atomic { ready[me] && bytes == 0 -> ready[me] = false; asleep[me] = true } ->
			/* Woken, its epoll looks at the bell again: another
			 * read the byte first, and it sleeps on. */
			goto sleeping
		:: atomic { ready[me] && bytes > 0 -> asleep[me] = false; take(me) } ->
			/* A ring: lead if the head has gone; else watch the
			 * head anew (it may be another) and sleep on. */
			if
			:: atomic { head == 0 -> head = me; reg[me] = false; ready[me] = false; armed[me] = true } ->
				goto look
			:: else -> goto rewatch
			fi
#ifdef TIMEOUTS
		:: asleep[me] = false;
			/* The bound: lead if there is no head; look either way. */
			if
			:: atomic { head == 0 -> head = me; reg[me] = false; ready[me] = false; armed[me] = true } ->
				goto deputy
			:: else
			fi;
			goto look
#endif
		fi;
deputy:
		/* Led, not on a ring: ring once, so that the next sleeper
		 * (or the next to queue) wakes and watches this head. */
		watch[me] = 0;
#ifndef M_NO_DEPUTY_RING
		ring();
#endif
look:
		/* A live holder: wait on it; else attempt. */
		if
		:: holder != 0 -> goto wait
		:: else -> goto attempt
		fi;
holding:
		/* Close of the queue's watch: a head lets go, then rings. */
		if
		:: head == me ->
			atomic { armed[me] = false; ev[me] = false };
#ifdef M_RING_FIRST
			ring();
			ring();
			head = 0;
#else
			head = 0;
			ring();
#ifndef M_ONE_RING
			/* A second ring: the next sleeper, which leads if the
			 * first one woken dies before it does, or else watches
			 * the new head. */
			ring();
#endif
#endif
		:: else
		fi;
		unjoin(me);
		d_step { assert(holder == me); letgo() };
		r++
	od;
	skip;	/* (a break may not land on a d_step) */
	d_step { gone[me] = true; finished++ }
	} unless { killed == me }
}

/* An older proclock's waiter: the names watched all along, no queue. */
proctype oldwaiter(byte me) {
	{
	armed[me] = true;
	do
	:: atomic { holder == 0 -> holder = me } -> break
	:: else ->
		if
		:: atomic { ev[me] -> ev[me] = false }
#ifdef TIMEOUTS
		:: true
#endif
		fi
	od;
	skip;
	d_step { armed[me] = false; ev[me] = false; letgo() };
	d_step { gone[me] = true; finished++ }
	} unless { killed == me }
}

proctype first() {
	{
	d_step { letgo() };
	d_step { gone[FIRST] = true; finished++ }
	} unless { killed == FIRST }
}

#ifdef OLDW
#define NALL (NW + 2)
#else
#define NALL (NW + 1)
#endif

init {
	byte i = 1;
	atomic {
		do
		:: i <= NW -> run waiter(i); i++
		:: else -> break
		od;
#ifdef OLDW
		run oldwaiter(NW + 1);
#endif
		run first()
	}
#ifdef CRASH
	/* One crash, at any moment, of anyone not done yet. */
	i = 1;
	do
	:: i < FIRST -> i++
	:: break
	od;
	if
	:: d_step { !gone[i] -> killed = i; bury(i) }
	:: skip
	fi
#endif
}

#ifdef LTL_LIVE
ltl live { <> (finished == NALL) }
#endif
