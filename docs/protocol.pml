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
 *   lock on the inode, not on the name. The empty database and an empty
 *   file are one kind here: both are "not a stamp", and the model lets
 *   either be old at any moment, which is what the file mechanism's judge
 *   makes of the database at once (free) and of an empty file after 30 s.
 * - The mark P.holder: absent, or a file written by process i (the writer's
 *   id doubles as the record's nonce) naming the inode its writer locked
 *   (markino: the record's LockDev/LockIno). It is created with O_EXCL and
 *   then written, two steps: in between it has no record (markst), and a
 *   reader judges it by its mtime, dead once older than 30 s (markold).
 *   A written mark is judged live or dead from alive[i], when the reader can
 *   judge its writer at all.
 * - The guard P.stale: a mutex with an owner, released when its owner
 *   crashes. That stands for the guard's own stale reclaim (a stamped file
 *   lock reclaimed once its holder is dead), which is the file mechanism's
 *   older, separately tested protocol; the model does not re-prove it.
 * - Time: instead of a clock, whoever reads an empty or torn inode's mtime
 *   finds it old (AGE below), unless a live file process is between its
 *   create (or truncate) and its stamp; whoever reads a mark without a
 *   record may find it old (MAGE), unless its writer is alive (and so
 *   between creating and writing it). Every write makes the inode young
 *   again. This keeps the state space small and excludes exactly the
 *   documented limit (docs/protocol.md, "Limits"): a holder stalled for
 *   more than 30 s between create and stamp (or mark). A SQLite process
 *   never writes its empty file, so a SQLite holder's file may be old at
 *   any moment, also between its lock and its mark: the model lets that
 *   happen, which is the hard case.
 *   The re-check "unchanged (inode, size, mtime, bytes)" under the guard is
 *   modelled as "same inode, same kind and stamp owner, and (empty or torn)
 *   still old". A file written and aged again between the judge and the
 *   re-check passes the model's re-check where the real one fails: the model
 *   allows more than the code does, so it errs on the safe side. The
 *   re-check of a mark compares its bytes: writer, inode and whether it is
 *   written; two marks without a record have the same (no) bytes.
 * - Each filesystem operation is one atomic step: open, read through an open
 *   descriptor, O_EXCL create, unlink by name, truncate, write a stamp, take
 *   or drop the kernel's lock. "Check that P (or the mark) is still X, then
 *   unlink it" is two steps, as in the code. Writing a stamp is one step, or
 *   a crash half way that leaves a torn file.
 * - Crashes: a crasher process may kill any lock user at any step (at most
 *   NCRASH in a run). A dead process's kernel locks and guard are dropped at
 *   once; its files, stamps and mark stay, and readers judge them dead.
 * - Each user makes at most TRIES attempts ("start over" counts as one) and
 *   holds at most HOLDS times. A file process re-reads a live mark WAITS
 *   times before it backs off; a SQLite process creates its mark at most 3
 *   times in one attempt (markTries), as in the code.
 *
 * Properties
 *
 * (a) mutual exclusion: holders <= 1, asserted whenever someone starts to
 *     hold (a holder stops holding when its release begins, or it crashes).
 * (b) a holder's files are its own until it releases: asserted when the
 *     release begins. SQLite: P names the locked inode, the kernel lock and
 *     the mark are ours. File: P names our inode, with our stamp.
 * (c) no wedge: once every user has finished or crashed, a fresh user of
 *     either mechanism (chosen nondeterministically), with an identity,
 *     arriving after every file is older than 30 s and never crashing,
 *     acquires within 3 attempts: asserted. A user blocked for ever (on the
 *     guard, say) makes the fresh user wait for ever, which spin reports as
 *     an invalid end state. Two documented limits (docs/protocol.md,
 *     "Limits") are excused, and only they: a written mark whose writer
 *     nobody can judge keeps a fresh *file* user out; and when that mark
 *     names an inode P no longer names (its writer was killed between
 *     unlinking P with RemoveOnRelease and unlinking its mark), it keeps a
 *     fresh SQLite user out too.
 *
 * Configurations (-D): CFG_SSF (default: 2 SQLite, the first with
 * RemoveOnRelease, and 1 file), CFG_SFF (1 SQLite, 2 file), CFG_SSR (2
 * SQLite, both with RemoveOnRelease), CFG_FF (2 file), CFG_SF (1 SQLite
 * with RemoveOnRelease, 1 file, each holding up to twice), CFG_SSSF (3
 * SQLite, 1 file; meant for TRIES=1). TRIES, NCRASH,
 * WAITS, HOLDS override the bounds.
 *
 * Waiting (-D):
 *   KQUEUE         a SQLite user waits in the kernel's queue: step 2
 *                  blocks until the pinned inode's lock is free (granted
 *                  when its holder lets go or is killed), instead of
 *                  failing busy (docs/protocol.md, "Waiting in the
 *                  kernel's queue").
 *
 * Variants of the world (-D):
 *   NOID1          SQLite user 1 has no identity: its mark says "holder
 *                  unknown", it reads every stamp as held, judges no mark
 *                  and takes no guard
 *   FOREIGN1       SQLite user 1 is in another pid namespace: each side
 *                  reads the other's mark and stamps as "cannot be judged"
 *   MARK_ONE_STEP  the mark is created and written in one step (the code
 *                  creates it with O_EXCL, then writes it: the default)
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
 *   M_CLEAR_UNJUDGEABLE step 4 as first written: a SQLite process with an
 *                   identity removes (under the guard) every mark that is
 *                   not a live holder's it can judge, whatever file it
 *                   names; one without an identity removes none
 *   M_ANY_INODE     step 4 takes any written mark for a leftover, whatever
 *                   inode it names (the mark's LockIno undone)
 *   M_NO_LEFTOVER   step 4 removes only marks whose writer is dead for
 *                   certain, never a leftover naming the pinned file
 *   M_NO_MARK_GUARD step 4 removes a mark without taking the guard
 *   M_UNLOCK_FIRST  a SQLite holder lets go of the kernel's lock before it
 *                   removes its mark
 *   M_NO_STAMPDEAD  a SQLite process clears a dead stamp only when no live
 *                   mark is beside it (StampDead undone)
 *   M_NO_MARKWINDOW a mark without a record is never dead (the 30 s rule
 *                   for marks undone)
 * -DNO_B leaves property (b) out, to see whether a mutation goes on to two
 * holders; -DSTRICT_C excuses nothing in (c), to see the documented limits,
 * and -DFRESH_SQLITE makes (c)'s fresh user a SQLite one.
 *
 * Proposed fixes (-D), for what the model found (docs/protocol.md, "Marks
 * nobody can judge"):
 *   FIX_TORN_CLEAR  a SQLite process clears a torn file older than 30 s
 *                   beside a live mark, as it clears a dead stamp there
 *                   (StampDead for a torn file too); else a torn file beside
 *                   a mark nobody can judge wedges every user. The code does
 *                   this (stamplock.Look), so it is on unless
 *                   -DM_NO_TORN_CLEAR undoes it.
 *   FIX_NOID_KEEPS  a SQLite process without an identity removes no mark,
 *                   not even a leftover naming its file; else its unguarded
 *                   removal can unlink another process's fresh mark
 *   FIX_NOID_GUARD  instead: it removes a leftover under the guard too (its
 *                   guard stamp, holder unknown, judged by the 30 s rule)
 */

/* every record appears whole (docs/protocol.md): undone by M_TWO_STEP, and
 * by the mutations that are about a record's two steps */
#if !defined(M_TWO_STEP) && !defined(M_LOOK_FIRST) && !defined(M_NO_MARKWINDOW)
#define WHOLE
#ifndef MARK_ONE_STEP
#define MARK_ONE_STEP
#endif
#endif

#ifndef M_NO_TORN_CLEAR
#define FIX_TORN_CLEAR
#endif

#ifndef TRIES
#define TRIES 2
#endif
#ifndef NCRASH
#define NCRASH 1
#endif
#ifndef WAITS
#define WAITS 1
#endif
#define MARKTRIES 3

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
#elif defined(CFG_SSSF)
#define NS 3
#define NF 1
#define ROR1 0
#define ROR2 0
#define ROR3 0
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
#ifndef ROR3
#define ROR3 0
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
byte markino;                          /* the inode the mark names (LockIno) */
bit markst;                            /* the mark is created, not yet written */
bit markold;                           /* ... and its mtime is more than 30 s ago */
byte guard;                            /* owner of the guard, 0: free */

/* processes */
bit alive[FRESH + 1];
bit noid[FRESH + 1];                   /* has no identity: its mark says "holder unknown" */
bit ns[FRESH + 1];                     /* its pid namespace */
bit dying[FRESH + 1];
byte crashes;
byte nfinished;
byte holders;
bit freshdone;                         /* (c)'s fresh user has acquired (or is excused) */

#ifdef LTL_LIVE
/* (c) as a liveness property, under weak fairness (pan -a -f): every run,
 * fair to every process, ends with the fresh user having acquired */
ltl fresh_acquires { <> freshdone }
#endif

/* property (b); -DNO_B leaves it out, to see where a mutation leads */
#ifdef NO_B
#define CHECK_B(c) skip
#else
#define CHECK_B(c) assert(c)
#endif

/*
 * A reader's verdict on the mark (lockrec.Mark.Dead, Live). Dead: its
 * writer is gone for certain (a written mark whose writer this reader can
 * judge, CANJUDGE, and is dead), or it has no record and is older than
 * 30 s. Live: there, and not dead; so a mark whose writer cannot be judged
 * (no identity, noid[w], or another pid namespace than the reader's,
 * ns[w] != ns[me]) is live, as is a young mark without a record.
 */
#define CANJUDGE(w) (!noid[w] && !noid[me] && ns[w] == ns[me])
#ifdef M_NO_MARKWINDOW
#define MARK_DEAD (mark != 0 && !markst && CANJUDGE(mark) && !alive[mark])
#else
#define MARK_DEAD (mark != 0 && (markst && markold || !markst && CANJUDGE(mark) && !alive[mark]))
#endif
#define LIVE_MARK (mark != 0 && !MARK_DEAD)

/* reading an empty or torn file's mtime: old by now, unless being stamped.
 * With LIVE_NOW no time passes: only the empty database (EMPTY, not being
 * written) is free at once, as the judge finds it; a torn file stays young,
 * and so does a mark without a record. */
#ifdef LIVE_NOW
#define AGE(j) if :: writing[j] == 0 && kind[j] != TORN -> old[j] = 1 :: else -> skip fi
#define MAGE skip
#else
#define AGE(j) if :: writing[j] == 0 -> old[j] = 1 :: else -> skip fi
/* reading the mtime of a mark without a record: it may be old by now,
 * unless its writer is alive (and so about to write it) */
#define MAGE if :: markst && !alive[mark] -> markold = 1 :: true -> skip fi
#endif

/* unlinking the mark by name, whoever's it is */
#define UNLINK_MARK mark = 0; markino = 0; markst = 0; markold = 0

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

/* the fresh user of (c) starts when everyone else is gone, after 30 s
 * (with LIVE_NOW: at once, no time having passed) */
inline fresh_start(sqlite) {
	if
	:: fresh ->
		atomic {
			nfinished == NPROC;
			alive[me] = 1;
#ifndef LIVE_NOW
			i = 1;
			do
			:: i < MAXINO -> old[i] = 1; i++
			:: else -> break
			od;
			i = 0;
			markold = 1;
#endif
			/* the documented limits: a written mark nobody can judge keeps
			 * file users out; naming an inode P does not name, SQLite
			 * users too */
#ifdef STRICT_C
			limit = 0
#else
			limit = (mark != 0 && !markst && !CANJUDGE(mark) && (!sqlite || markino != P))
#endif
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

/* a dead stamp; an empty or torn file past 30 s */
#define STAMP_DEAD (jk == STAMP && CANJUDGE(jo) && !alive[jo])
#define UNSTAMPED_OLD (jk != STAMP && jold)

inline verdict() {
	stale = !ml && (STAMP_DEAD || UNSTAMPED_OLD)
}

#ifdef M_MARK_BEFORE_P
#define JUDGE_MARK_FIRST atomic { MAGE; ml = LIVE_MARK }
#define JUDGE_MARK_AFTER skip
#else
#define JUDGE_MARK_FIRST skip
#define JUDGE_MARK_AFTER atomic { MAGE; ml = LIVE_MARK }
#endif

/* is P still the file judged stale (inode, kind, stamp owner, age)? */
#define SAME_FILE(j) (P == j && kind[j] == jk && owner[j] == jo && (jk == STAMP || old[j]))

/* under the guard: is P still the file judged stale, and no live mark? */
inline recheck(j) {
	JUDGE_MARK_FIRST;
	ok = SAME_FILE(j);
	JUDGE_MARK_AFTER;
#ifdef M_NO_RECHECK_MARK
	ml = 0;
#endif
	ok = ok && !ml;
	ml = 0
}

/*
 * Step 4's verdict on a mark already there (sqlitelock.Lock.mark), read
 * into m (writer), ms (no record yet), mi (inode named), md (dead, as this
 * reader judges it). A leftover names the pinned file, whose kernel lock
 * this process holds; any other mark is removed only when its writer is
 * dead for certain, and never by a process without an identity.
 */
/* stamplock.Look's StampDead: a dead stamp beside a live mark is cleared;
 * a torn file past 30 s beside one is not, unless FIX_TORN_CLEAR */
#ifdef M_NO_STAMPDEAD
#define STAMPDEAD_ML 0
#else
#define STAMPDEAD_ML 1
#endif
#ifdef FIX_TORN_CLEAR
#define TORN_ML 1
#else
#define TORN_ML 0
#endif

#ifdef M_ANY_INODE
#define LEFTOVER (!ms)
#else
#define LEFTOVER (!ms && mi == pin)
#endif
#ifdef M_CLEAR_UNJUDGEABLE
#define REMOVABLE (!noid[me] && !(!ms && CANJUDGE(m) && alive[m]))
#elif defined(M_NO_LEFTOVER)
#define REMOVABLE (!noid[me] && md)
#elif defined(FIX_NOID_KEEPS)
#define REMOVABLE (!noid[me] && (LEFTOVER || md))
#else
#define REMOVABLE (LEFTOVER || (!noid[me] && md))
#endif

#ifdef M_NO_MARK_GUARD
#define NO_MARK_GUARD 1
#else
#define NO_MARK_GUARD 0
#endif
#ifdef FIX_NOID_GUARD
#define NOID_GUARD 1
#else
#define NOID_GUARD 0
#endif

proctype Sqlite(byte me; byte tries; bit ror; bit fresh)
{
	byte pin, lk, jk, jo, m, mi, mt, i, nheld;
	bit jold, ml, ms, md, stale, ok, h, limit;

	{
	fresh_start(1);
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
	/* not empty: the root judges the stamp (or the torn file): without an
	 * identity of its own it reads every stamp as held */
	if
	:: noid[me] -> goto fail
	:: else -> skip
	fi;
	JUDGE_MARK_FIRST;
	JUDGE_MARK_AFTER;
	/* stale, or a dead stamp beside a live mark (StampDead): clear it */
	stale = (STAMPDEAD_ML || !ml) && STAMP_DEAD || (TORN_ML || !ml) && UNSTAMPED_OLD;
	ml = 0;
	if
	:: !stale -> goto fail                    /* held by the stamp's or the mark's holder */
	:: else -> skip
	fi;
	/* clear: under the guard, read P again (marks do not matter), and
	 * write the empty database in place */
	lockguard();
	atomic {
		if
		:: SAME_FILE(pin) -> kind[pin] = EMPTY; owner[pin] = 0; old[pin] = 0
		:: else -> skip
		fi
	}
	unlockguard();
	goto fail                                  /* and try again */

lock:	/* 2. the kernel's exclusive lock on the pinned inode */
	atomic {
		if
		:: klock[pin] == 0 -> klock[pin] = me; lk = pin
#ifndef KQUEUE
		:: else -> goto fail                   /* busy */
#endif
		fi
	}

	/* 3. P still names the pinned file, else start over */
	if
	:: P == pin -> skip
	:: else -> goto unlock
	fi;

markc:	/* 4. create the mark, naming the pinned file */
	if
	:: mt == MARKTRIES -> goto unlock          /* busy */
	:: else -> mt++
	fi;
#ifdef M_MARK_RENAME
	atomic { mark = me; markino = pin; markst = 0; markold = 0 };   /* written whole, renamed over */
	goto look;
#else
	atomic {
		if
		:: mark == 0 ->
			mark = me; markino = pin; markold = 0;
#ifdef MARK_ONE_STEP
			markst = 0; goto look
#else
			markst = 1; goto markw
#endif
		:: else -> skip
		fi
	}
	/* there is one: read it */
	atomic {
		m = mark; ms = markst; mi = markino;
		MAGE;
		md = MARK_DEAD
	}
	if
	:: m == 0 -> goto unlock                   /* gone meanwhile: busy, holder unknown */
	:: !REMOVABLE -> goto unlock               /* held by that holder */
	:: else -> skip
	fi;
	/* remove it: under the guard (with an identity), if P is still the
	 * pinned file and the mark still has the same bytes */
	if
	:: (!noid[me] || NOID_GUARD) && !NO_MARK_GUARD -> lockguard()
	:: else -> skip
	fi;
	if
	:: P != pin -> goto unlock                 /* start over */
	:: else -> skip
	fi;
	atomic { ok = (mark != 0 && markst == ms && (ms || mark == m && markino == mi)) };
	if
	:: ok -> atomic { UNLINK_MARK }
	:: else -> skip
	fi;
	ok = 0;
	if
	:: guard == me -> unlockguard()
	:: else -> skip
	fi;
	atomic { m = 0; ms = 0; mi = 0; md = 0 };
	goto markc
#endif

markw:	/* the mark's second step: write the record into the file created */
	atomic {
		if
		:: mark == me && markst -> markst = 0
		:: else -> skip                        /* unlinked meanwhile: written to nobody */
		fi
	}

look:	/* 5. look for a stamp in the pinned file */
#ifndef M_NO_STAMP_LOOK
	if
	:: kind[pin] != EMPTY ->
		/* a file process stamped it: remove our mark (read it, compare
		 * the nonce, unlink it), back off */
		atomic { ok = (mark == me && !markst) };
		if
		:: ok -> atomic { UNLINK_MARK }
		:: else -> skip
		fi;
		ok = 0;
		goto unlock
	:: else -> skip
	fi;
#endif

	/* 6. held */
	atomic { h = 1; holders++; assert(holders <= 1) }

	/* release */
	atomic {
		CHECK_B(P == pin && klock[pin] == me && mark == me && !markst && markino == pin);
		h = 0; holders--; nheld++
	}
#ifdef M_UNLOCK_FIRST
	atomic { klock[pin] = 0; lk = 0 };
#endif
#ifdef M_ROR_MARK_FIRST
	atomic { UNLINK_MARK };
#endif
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
#ifndef M_ROR_MARK_FIRST
	atomic { UNLINK_MARK };                    /* a holder's mark is its own: unlinked by name */
#endif

unlock:
	if
	:: guard == me -> unlockguard()
	:: else -> skip
	fi;
	atomic { klock[lk] = 0; lk = 0 }
fail:
	atomic { pin = 0; jk = 0; jo = 0; jold = 0; stale = 0; ok = 0; m = 0; ms = 0; mi = 0; md = 0; mt = 0 }
	goto attempt
finish:
	atomic {
		assert(!fresh || nheld > 0 || limit);  /* (c) */
		freshdone = freshdone || fresh && (nheld > 0 || limit);
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
			pin = 0; lk = 0; jk = 0; jo = 0; m = 0; ms = 0; mi = 0; md = 0; mt = 0;
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
	fresh_start(0);
attempt:
	if
	:: tries == 0 || nheld == HOLDS -> goto finish
	:: else -> tries--
	fi;

create:	/* 1. create P with O_EXCL */
	atomic {
		if
#ifdef WHOLE
		/* written in a temporary file, renamed (or linked) in place whole: one step either way */
		:: P == 0 -> newinode(my); P = my; kind[my] = STAMP; owner[my] = me; goto stamped
#else
		:: P == 0 -> newinode(my); P = my; writing[my] = me; wr = my; goto created
#endif
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
	atomic { MAGE; ok = (kind[j] == jk && owner[j] == jo && !LIVE_MARK) };
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
#ifdef WHOLE
	/* our stamp written over P in place, in one write that covers it */
	atomic { kind[j] = STAMP; owner[j] = me; old[j] = 0; my = j };
	j = 0;
	goto stamped
#else
	/* truncate P in place, then write our stamp */
	atomic { kind[j] = EMPTY; owner[j] = 0; old[j] = 0; writing[j] = me; wr = j; my = j }
	j = 0;
	goto created
#endif
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
stamped:
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
	:: atomic { MAGE; ml = LIVE_MARK };
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

backoff:	/* write the empty database over our stamp (if P is still our
		 * file, with our stamp); never remove P */
	atomic {
		ml = 0; w = 0;
		if
		:: P == my && kind[my] == STAMP && owner[my] == me -> kind[my] = EMPTY; old[my] = 0
		:: else -> skip
		fi
	}
fail:
	atomic { my = 0; j = 0; jk = 0; jo = 0; jold = 0; ml = 0; stale = 0; ok = 0 }
	goto attempt
finish:
	atomic {
		assert(!fresh || nheld > 0 || limit);  /* (c) */
		freshdone = freshdone || fresh && (nheld > 0 || limit);
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
#ifndef FRESH_SQLITE
	:: run File(FRESH, 3, 1)
#endif
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
#if NPROC >= 4
	:: atomic { crashes < NCRASH && alive[4] && !dying[4] -> dying[4] = 1; crashes++ }
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
#if NS >= 3
		run Sqlite(3, TRIES, ROR3, 0);
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
