/*
 * docs/protocol.pml: the on-disk protocol of docs/protocol.md ("One path,
 * two mechanisms") as a Promela model, checked with spin.
 *
 *   spin -a -DCFG_SSF docs/protocol.pml && gcc -O2 -DSAFETY -o pan pan.c && ./pan -m100000
 *
 * (protocol_spin_test.go at the module root runs every configuration and
 * every mutation below.)
 *
 * What is modelled, and how abstractly
 *
 * - The path P names an inode (0: absent). Inodes are numbered as created
 *   and never reused. Each has a content kind (empty, a stamp of process i,
 *   torn), an "old" bit (its mtime is more than 30 s ago), a "writing" bit
 *   (a live file-mechanism process is between creating or truncating it and
 *   writing its stamp) and a kernel lock owner: SQLite's exclusive lock is a
 *   lock on the inode, not on the name.
 * - The mark P.holder: absent, or the record of process i, judged live or
 *   dead from alive[i]. The writer's id doubles as the record's nonce.
 * - The guard P.stale: a mutex with an owner, released when its owner
 *   crashes. That stands for the guard's own stale reclaim (a stamped file
 *   lock reclaimed once its holder is dead), which is the file mechanism's
 *   older, separately tested protocol; the model does not re-prove it.
 * - Time: instead of a clock, whoever reads an empty or torn inode's mtime
 *   may find it old (the nondeterministic AGE below), unless a live file
 *   process is between its create (or truncate) and its stamp. Every write
 *   makes the inode young again. This keeps the state space small and
 *   excludes exactly the documented limit (docs/protocol.md, "Limits"): a
 *   file holder stalled for more than 30 s between create and stamp. A
 *   SQLite process never writes its empty file, so a SQLite holder's file may
 *   be old at any moment, also between its lock and its mark: the model lets
 *   that happen, which is the hard case.
 *   The re-check "unchanged (inode, size, mtime, bytes)" under the guard is
 *   modelled as "same inode, same kind and stamp owner, and (empty or torn)
 *   still old". A file written and aged again between the judge and the
 *   re-check passes the model's re-check where the real one fails: the model
 *   allows more than the code does, so it errs on the safe side.
 * - Each filesystem operation is one atomic step: open, read through an open
 *   descriptor, O_EXCL create, unlink by name, truncate, write a stamp, take
 *   or drop the kernel's lock. "Check that P still names X, then unlink P"
 *   is two steps, as in the code. Writing a stamp is one step, or a crash
 *   half way that leaves a torn file.
 * - Crashes: a crasher process may kill any lock user at any step (at most
 *   NCRASH in a run). A dead process's kernel locks and guard are dropped at
 *   once; its files, stamps and mark stay, and readers judge them dead.
 * - Each user makes at most TRIES attempts ("start over" counts as one) and
 *   holds at most once. A file process re-reads a live mark WAITS times
 *   before it backs off.
 *
 * Properties
 *
 * (a) mutual exclusion: holders <= 1, asserted whenever someone starts to
 *     hold (a holder stops holding when its release begins, or it crashes).
 * (b) a holder's files are its own until it releases: asserted when the
 *     release begins. SQLite: P names the locked inode, the kernel lock and
 *     the mark are ours. File: P names our inode, with our stamp.
 * (c) no wedge: once every user has finished or crashed, a fresh user of
 *     either mechanism (chosen nondeterministically), arriving after every
 *     file is older than 30 s and never crashing, acquires within 3
 *     attempts: asserted. A user blocked for ever (on the guard, say) makes
 *     the fresh user wait for ever, which spin reports as an invalid end
 *     state.
 *
 * Configurations (-D): CFG_SSF (default: 2 SQLite, the first with
 * RemoveOnRelease, and 1 file), CFG_SFF (1 SQLite, 2 file), CFG_SSR (2
 * SQLite, both with RemoveOnRelease), CFG_FF (2 file), CFG_SF (1 SQLite
 * with RemoveOnRelease, 1 file, each holding up to twice). TRIES, NCRASH,
 * WAITS, HOLDS override the bounds.
 *
 * Variants of the world (-D):
 *   NOID1          SQLite user 1 has no identity: its mark says "holder
 *                  unknown", it reads every stamp as held and takes no guard
 *   FOREIGN1       SQLite user 1 is in another pid namespace: each side
 *                  reads the other's mark and stamps as "cannot be judged"
 *   MARK_TWO_STEP  the mark is created (O_EXCL), then written: a reader in
 *                  between finds it unreadable
 *
 * Mutations (-D), each a design choice undone (docs/protocol.md, "What each
 * choice defends against"):
 *   M_RENAME_ASIDE  the file mechanism reclaims a stale P by renaming it
 *                   aside (and linking it back if it changed) instead of in
 *                   place
 *   M_MARK_RENAME   the mark is written by rename-over, not O_EXCL
 *   M_ROR_MARK_FIRST RemoveOnRelease removes the mark before P
 *   M_LOOK_FIRST    the file process reads the mark before writing its stamp
 *   M_NO_STAMP_LOOK the SQLite process does not look for a stamp after its
 *                   mark
 *   M_MARK_BEFORE_P the judge (and the guard's re-check) read the mark
 *                   before P
 *   M_NO_RECHECK_MARK the guard's re-check does not read the mark again
 * -DNO_B leaves property (b) out, to see whether a mutation goes on to two
 * holders.
 *
 * Proposed fixes (-D), for the failures found with NOID1 and FOREIGN1:
 *   FIX_OWN_MARK_GUARD a SQLite process removes its own mark under the guard
 *                   when it backs off at step 5, and with RemoveOnRelease it
 *                   removes P and then its mark under the guard; one without
 *                   an identity leaves its mark on backing off and leaves P
 *                   on release
 *   FIX_NOID_GUARD  with FIX_OWN_MARK_GUARD: one without an identity takes
 *                   the guard too (its guard stamp, holder unknown, judged by
 *                   the 30 s rule)
 */

#ifndef TRIES
#define TRIES 2
#endif
#ifndef NCRASH
#define NCRASH 1
#endif
#ifndef WAITS
#define WAITS 1
#endif

#if defined(CFG_SFF)
#define NS 1
#define NF 2
#define ROR1 0
#define ROR2 0
#elif defined(CFG_SSR)
#define NS 2
#define NF 0
#define ROR1 1
#define ROR2 1
#elif defined(CFG_FF)
#define NS 0
#define NF 2
#define ROR1 0
#define ROR2 0
#elif defined(CFG_SF)
#define NS 1
#define NF 1
#define ROR1 1
#define ROR2 0
#ifndef HOLDS
#define HOLDS 2
#endif
#else
#define CFG_SSF 1
#define NS 2
#define NF 1
#define ROR1 1
#define ROR2 0
#endif
#ifndef HOLDS
#define HOLDS 1
#endif

#define NPROC (NS + NF)
#define FRESH (NPROC + 1)              /* the fresh user of property (c) */
#define MAXINO (2 * (NPROC * TRIES + 3) + 2)

/* content kinds */
#define EMPTY 0
#define STAMP 1
#define TORN 2

/* the path and the inodes */
byte P;                                /* inode named by P, 0: absent */
byte nino;                             /* inodes created so far */
byte kind[MAXINO];
byte owner[MAXINO];                    /* the stamp's writer */
bit old[MAXINO];                       /* mtime more than 30 s ago */
byte writing[MAXINO];                  /* live file process between create and stamp */
byte klock[MAXINO];                    /* the kernel's exclusive lock (SQLite) */

/* P.holder and P.stale */
byte mark;                             /* writer of the mark, 0: absent */
bit markst;                            /* the mark is created, not yet written */
byte guard;                            /* owner of the guard, 0: free */

/* processes */
bit alive[FRESH + 1];
bit noid[FRESH + 1];                   /* has no identity: its mark says "holder unknown" */
bit ns[FRESH + 1];                     /* its pid namespace */
bit dying[FRESH + 1];
byte crashes;
byte nfinished;
byte holders;

/* property (b); -DNO_B leaves it out, to see where a mutation leads */
#ifdef NO_B
#define CHECK_B(c) skip
#else
#define CHECK_B(c) assert(c)
#endif

/*
 * A reader's verdict on the mark: held when its writer is alive, or cannot
 * be judged (its writer has no identity, noid[w], or lives in another pid
 * namespace than the reader, ns[w] != ns[me]), or the mark is unreadable
 * (created, not yet written: markst). LIVE_MARK is that verdict; KEEP_MARK
 * is step 4's: a SQLite process with an identity removes (under the guard)
 * every mark that is not a live, known holder's; one without an identity
 * judges nothing and keeps every mark.
 */
#ifdef FIX_NOID_GUARD
#define NOID_GUARD 1
#else
#define NOID_GUARD 0
#endif

#define CANJUDGE(w) (!noid[w] && !noid[me] && ns[w] == ns[me])
#define LIVE_MARK (mark != 0 && (markst || !CANJUDGE(mark) || alive[mark]))
#define KEEP_MARK (mark != 0 && (noid[me] || (!markst && CANJUDGE(mark) && alive[mark])))

/* reading an empty or torn file's mtime: it may be old by now */
#define AGE(j) if :: writing[j] == 0 -> old[j] = 1 :: else -> skip fi

inline newinode(x) {
	nino++;
	assert(nino < MAXINO);
	x = nino;
	kind[x] = EMPTY;
	owner[x] = 0;
	old[x] = 0
}

inline lockguard() {
	atomic { guard == 0 -> guard = me }
}

inline unlockguard() {
	guard = 0
}

/* the fresh user of (c) starts when everyone else is gone, after 30 s */
inline fresh_start() {
	if
	:: fresh ->
		atomic {
			nfinished == NPROC;
			alive[me] = 1;
			i = 1;
			do
			:: i < MAXINO -> old[i] = 1; i++
			:: else -> break
			od;
			i = 0;
			/* the documented limit: a mark nobody can judge keeps file users out */
			limit = (mark != 0 && (markst || !CANJUDGE(mark)))
		}
	:: else -> skip
	fi
}

/*
 * Judge what a reader found at P: content jk/jo of inode j, read first,
 * then the mark (docs/protocol.md, "Judging what is there"). stale is the
 * verdict; a live mark, a live stamp or a young empty or torn file is held.
 * With M_MARK_BEFORE_P the mark is read (into ml) before P.
 */
inline readP(j, emptytoo) {
	atomic {
		jk = kind[j];
		jo = owner[j];
		if
		:: jk == TORN || (emptytoo && jk == EMPTY) -> AGE(j)
		:: else -> skip
		fi;
		jold = old[j]
	}
}

inline verdict() {
	stale = !ml && ((jk == STAMP && CANJUDGE(jo) && !alive[jo]) || (jk != STAMP && jold))
}

#ifdef M_MARK_BEFORE_P
#define JUDGE_MARK_FIRST ml = LIVE_MARK
#define JUDGE_MARK_AFTER skip
#else
#define JUDGE_MARK_FIRST skip
#define JUDGE_MARK_AFTER ml = LIVE_MARK
#endif

/* under the guard: is P still the file judged stale, and no live mark? */
inline recheck(j) {
	JUDGE_MARK_FIRST;
	ok = (P == j && kind[j] == jk && owner[j] == jo && (jk == STAMP || old[j]));
	JUDGE_MARK_AFTER;
#ifdef M_NO_RECHECK_MARK
	ml = 0;
#endif
	ok = ok && !ml;
	ml = 0
}

proctype Sqlite(byte me; byte tries; bit ror; bit fresh)
{
	byte pin, lk, jk, jo, m, i, nheld;
	bit jold, ml, ms, stale, ok, h, limit;

	{
	fresh_start();
attempt:
	if
	:: tries == 0 || nheld == HOLDS -> goto finish
	:: else -> tries--
	fi;

	/* 1. pin: open P, or create it empty with O_EXCL */
	atomic {
		if
		:: P != 0 -> pin = P
		:: else -> newinode(pin); P = pin
		fi
	}
	readP(pin, 0);
	if
	:: jk == EMPTY -> goto lock
	:: else -> skip
	fi;
	/* not empty: the root judges the stamp (or the torn file); without an
	 * identity of its own it reads every stamp as held */
	JUDGE_MARK_FIRST;
	JUDGE_MARK_AFTER;
	verdict();
	stale = stale && !noid[me];
	if
	:: !stale -> goto fail                    /* held by the stamp's holder */
	:: else -> skip
	fi;
	/* clear: under the guard, read P and the mark again, truncate in place */
	lockguard();
	recheck(pin);
	if
	:: ok -> atomic { kind[pin] = EMPTY; owner[pin] = 0; old[pin] = 0 }
	:: else -> skip
	fi;
	unlockguard();
	goto fail                                  /* and try again */

lock:	/* 2. the kernel's exclusive lock on the pinned inode */
	atomic {
		if
		:: klock[pin] == 0 -> klock[pin] = me; lk = pin
		:: else -> goto fail                   /* busy */
		fi
	}

	/* 3. P still names the pinned file, else start over */
	if
	:: P == pin -> skip
	:: else -> goto unlock
	fi;

markc:	/* 4. create the mark */
#ifdef M_MARK_RENAME
	mark = me;                                 /* written whole, renamed over */
#else
#ifdef MARK_TWO_STEP
	atomic {
		if
		:: mark == 0 -> mark = me; markst = 1
		:: else -> goto markx
		fi
	}
	markst = 0;                                /* write the record */
	goto look;
markx:
#else
	atomic {
		if
		:: mark == 0 -> mark = me; goto look
		:: else -> skip
		fi
	}
#endif
	/* there is one: read it */
	atomic { m = mark; ms = markst; ml = KEEP_MARK }
	if
	:: m == 0 -> goto markc                    /* gone meanwhile */
	:: ml -> ml = 0; m = 0; ms = 0; goto unlock        /* held by that holder */
	:: else -> skip
	fi;
	/* dead, unknown or unreadable: remove it under the guard, if it is the
	 * same mark and P the pinned file */
	lockguard();
	atomic { ok = (mark == m && markst == ms && P == pin) };
	if
	:: ok -> mark = 0
	:: else -> skip
	fi;
	ok = 0;
	unlockguard();
	m = 0; ms = 0;
	goto markc
#endif

look:	/* 5. look for a stamp in the pinned file */
#ifndef M_NO_STAMP_LOOK
	if
	:: kind[pin] != EMPTY ->
		/* a file process stamped it: remove our mark, back off */
#ifdef FIX_OWN_MARK_GUARD
		/* proposed: under the guard (FIX_NOID_GUARD: a process without an
		 * identity takes it too; else it leaves its mark) */
		if
		:: noid[me] && !NOID_GUARD -> goto unlock
		:: else -> lockguard()
		fi;
#endif
		atomic { ok = (mark == me) };
		if
		:: ok -> mark = 0
		:: else -> skip
		fi;
		ok = 0;
#ifdef FIX_OWN_MARK_GUARD
		unlockguard();
#endif
		goto unlock
	:: else -> skip
	fi;
#endif

	/* 6. held */
	atomic { h = 1; holders++; assert(holders <= 1) }

	/* release */
	atomic {
		CHECK_B(P == pin && klock[pin] == me && mark == me);
		h = 0; holders--; nheld++
	}
#ifdef M_ROR_MARK_FIRST
	atomic { ok = (mark == me) };
	if
	:: ok -> mark = 0
	:: else -> skip
	fi;
	ok = 0;
#endif
#ifdef FIX_OWN_MARK_GUARD
	/* proposed: RemoveOnRelease removes P, then the mark, under the guard;
	 * a holder without an identity (it has no guard) leaves P in place */
	if
	:: ror && (!noid[me] || NOID_GUARD) ->
		lockguard();
		atomic { ok = (P == pin) };
		if
		:: ok -> P = 0
		:: else -> skip
		fi;
		atomic { ok = (mark == me) };
		if
		:: ok -> mark = 0
		:: else -> skip
		fi;
		ok = 0;
		unlockguard();
		goto unlock
	:: else -> skip
	fi;
#else
	if
	:: ror ->
		atomic { ok = (P == pin) };          /* stat P: still the pinned file? */
		if
		:: ok -> P = 0                         /* unlink P */
		:: else -> skip
		fi;
		ok = 0
	:: else -> skip
	fi;
#endif
#ifndef M_ROR_MARK_FIRST
	atomic { ok = (mark == me) };              /* read the mark, compare the nonce */
	if
	:: ok -> mark = 0                          /* unlink it */
	:: else -> skip
	fi;
	ok = 0;
#endif

unlock:
	atomic { klock[pin] = 0; lk = 0 }
fail:
	atomic { pin = 0; jk = 0; jo = 0; jold = 0; stale = 0; ok = 0 }
	goto attempt
finish:
	atomic {
		assert(!fresh || nheld > 0);                /* (c) */
		alive[me] = 0;
		nfinished++
	}
	} unless {
		atomic {
			dying[me] ->
			alive[me] = 0;
			if
			:: lk != 0 -> klock[lk] = 0
			:: else -> skip
			fi;
			if
			:: guard == me -> guard = 0
			:: else -> skip
			fi;
			if
			:: h -> holders--
			:: else -> skip
			fi;
			pin = 0; lk = 0; jk = 0; jo = 0; m = 0; ms = 0;
			jold = 0; ml = 0; stale = 0; ok = 0; h = 0; nheld = 0; tries = 0;
			nfinished++
		}
	}
}

proctype File(byte me; byte tries; bit fresh)
{
	byte my, j, jk, jo, wr, w, i, nheld;
	bit jold, ml, stale, ok, h, limit;

	{
	fresh_start();
attempt:
	if
	:: tries == 0 || nheld == HOLDS -> goto finish
	:: else -> tries--
	fi;

create:	/* 1. create P with O_EXCL */
	atomic {
		if
		:: P == 0 -> newinode(my); P = my; writing[my] = me; wr = my; goto created
		:: else -> skip
		fi
	}
	/* P exists: open it, read it, judge it */
	atomic {
		j = P;
		if
		:: j == 0 -> goto create
		:: else -> skip
		fi
	}
	JUDGE_MARK_FIRST;
	readP(j, 1);
	JUDGE_MARK_AFTER;
	verdict();
	ml = 0;
	if
	:: !stale -> goto fail                    /* held */
	:: else -> skip
	fi;

	/* convert, under the guard */
	lockguard();
	recheck(j);
	if
	:: !ok -> unlockguard(); goto fail
	:: else -> skip
	fi;
#ifdef M_RENAME_ASIDE
	/* rename P aside; check it; a changed file is linked back */
	P = 0;
	atomic { ok = (kind[j] == jk && owner[j] == jo && !LIVE_MARK) };
	if
	:: ok -> skip                              /* unlink the private name */
	:: else -> atomic { if :: P == 0 -> P = j :: else -> skip fi }
	fi;
	unlockguard();
	if
	:: ok -> ok = 0; j = 0; jk = 0; jo = 0; jold = 0; stale = 0; goto create
	:: else -> goto fail
	fi;
#else
	/* truncate P in place, then write our stamp */
	atomic { kind[j] = EMPTY; owner[j] = 0; old[j] = 0; writing[j] = me; wr = j; my = j }
	j = 0;
	goto created
#endif

created:
#ifdef M_LOOK_FIRST
	if
	:: guard == me -> goto stamp               /* convert: the re-check read the mark */
	:: else -> skip
	fi;
	goto lookmark;
stamp:
#endif
	/* write the stamp (or crash half way, leaving a torn file) */
	if
	:: atomic { kind[my] = STAMP; owner[my] = me; old[my] = 0; writing[my] = 0; wr = 0 }
	:: atomic {
		!fresh && crashes < NCRASH ->
		crashes++; kind[my] = TORN; owner[my] = 0; old[my] = 0; dying[me] = 1
	   }
	fi;
	if
	:: guard == me -> unlockguard()
	:: else -> skip
	fi;
#ifdef M_LOOK_FIRST
	goto confirm;
#endif

lookmark:	/* 2. look for a mark; a live one: wait, re-reading it */
	w = 0;
	do
	:: atomic { ml = LIVE_MARK };
		if
		:: !ml -> break
		:: else -> skip
		fi;
		if
		:: w < WAITS -> w++
		:: else -> goto backoff
		fi
	od;
	w = 0;
#ifdef M_LOOK_FIRST
	goto stamp;
#endif

confirm:	/* 3. P still names our file, with our stamp */
	atomic {
		ok = (P == my && kind[my] == STAMP && owner[my] == me);
		if
		:: !ok -> goto fail
		:: else -> skip
		fi
	}

	/* 4. held */
	atomic { h = 1; holders++; assert(holders <= 1) }

	/* release: remove P if it is still our file */
	atomic {
		CHECK_B(P == my && kind[my] == STAMP && owner[my] == me);
		h = 0; holders--; nheld++
	}
	atomic { ok = (P == my && kind[my] == STAMP && owner[my] == me) };
	if
	:: ok -> P = 0
	:: else -> skip
	fi;
	goto fail

backoff:	/* truncate our stamp (if it still is ours); never remove P */
	atomic {
		ml = 0; w = 0;
		if
		:: kind[my] == STAMP && owner[my] == me -> kind[my] = EMPTY; old[my] = 0
		:: else -> skip
		fi
	}
fail:
	atomic { my = 0; j = 0; jk = 0; jo = 0; jold = 0; ml = 0; stale = 0; ok = 0 }
	goto attempt
finish:
	atomic {
		assert(!fresh || nheld > 0 || limit);  /* (c) */
		alive[me] = 0;
		nfinished++
	}
	} unless {
		atomic {
			dying[me] ->
			alive[me] = 0;
			if
			:: guard == me -> guard = 0
			:: else -> skip
			fi;
			if
			:: wr != 0 -> writing[wr] = 0
			:: else -> skip
			fi;
			if
			:: h -> holders--
			:: else -> skip
			fi;
			my = 0; j = 0; jk = 0; jo = 0; wr = 0; w = 0;
			jold = 0; ml = 0; stale = 0; ok = 0; h = 0; tries = 0; nheld = 0;
			nfinished++
		}
	}
}

/* property (c): once everyone is gone, a fresh user of either mechanism */
proctype Fresh()
{
	nfinished == NPROC;
	if
	:: run Sqlite(FRESH, 3, 0, 1)
	:: run File(FRESH, 3, 1)
	fi
}

/* kills at most NCRASH lock users, each at any step */
proctype Crasher()
{
end:
	do
	:: atomic { crashes < NCRASH && alive[1] && !dying[1] -> dying[1] = 1; crashes++ }
	:: atomic { crashes < NCRASH && alive[2] && !dying[2] -> dying[2] = 1; crashes++ }
#if NPROC >= 3
	:: atomic { crashes < NCRASH && alive[3] && !dying[3] -> dying[3] = 1; crashes++ }
#endif
	od
}

init
{
	byte k = 1;
	atomic {
		do
		:: k <= NPROC -> alive[k] = 1; k++
		:: else -> break
		od;
#ifdef NOID1
		noid[1] = 1;                           /* SQLite user 1 has no identity */
#endif
#ifdef FOREIGN1
		ns[1] = 1;                             /* SQLite user 1 is in another pid namespace */
#endif
#if NS >= 1
		run Sqlite(1, TRIES, ROR1, 0);
#endif
#if NS >= 2
		run Sqlite(2, TRIES, ROR2, 0);
#endif
#if NF >= 1
		run File(NS + 1, TRIES, 0);
#endif
#if NF >= 2
		run File(NS + 2, TRIES, 0);
#endif
#if NCRASH > 0
		run Crasher();
#endif
#ifndef NOFRESH
		run Fresh();
#endif
	}
}
