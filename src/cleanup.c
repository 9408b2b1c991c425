/* SPDX-License-Identifier: MIT */
/*
 * Cleanups: functions that run when the values stored before them die.
 *
 * Each cleanup is a record stored in the arena itself, a value of the batch
 * that pushed it, on a doubly linked list whose head is in the arena's
 * bookkeeping (cold.h), the latest first.  A record notes the arena's mark
 * serial (`saves`) when it was pushed.  A mark taken before the push has a
 * serial at most that, one taken after it a larger one.  So a rewind to the
 * mark of serial s runs the records from the head while their serial is
 * >= s: they were pushed after the mark, and lie after it, like the values
 * they refer to.  A reset or release runs them all.  Serials only
 * grow, so the list stays in order of serial.
 *
 * While the list is not empty, and while its cleanups run, the arena's
 * `pending` has ARENA__PENDING_CLEANUP, so that the inline reset, rewind
 * and release call the library (internal/arena.h); an arena without
 * cleanups never gets here.  The run comes first in those calls, before
 * anything expires, clobbers or poisons memory, with the arena flagged
 * ARENA__CLEANING: a push on it, and a reset, rewind or release of it, are
 * then refused as misuse.  Each record is unlinked before its function is
 * called, so a cleanup may cancel the others.
 *
 * A record carries a check word: its address and its arena's, mixed with a
 * constant, whose low bit flips when it has run or been cancelled.  A record
 * that the program overwrote is reported at its run (and the rest of the
 * list, which its links no longer describe, is dropped); a cancel reads it
 * to tell a live record from a spent one or a foreign pointer.  A cancelled
 * record goes back to the arena (arena_free()), so that a resource opened
 * and closed in every step of a long batch (a child arena's tie) does not
 * grow it.
 *
 * Costs: a push is an allocation and a few stores; a cancel, a few stores
 * and arena_free(); a run, a call per record.
 */
#include "reuse.h"

struct arena_cleanup {
    arena_cleanup_fn *fn;
    void *ctx;
    struct arena_cleanup *next;  /* the one pushed before it */
    struct arena_cleanup **link; /* what points to it: the head or a newer record's next */
    uint64_t serial;             /* the arena's `saves` at the push */
    uintptr_t check;             /* key(): live; key() ^ SPENT: ran or cancelled */
};

#define CLEANUP_MIX ((uintptr_t)UINT64_C(0xC1EA4C1EA4C1EA4D))
#define SPENT       ((uintptr_t)1)

static uintptr_t key(const struct arena_cleanup *c, const arena *a)
{
    return (uintptr_t)c ^ (uintptr_t)a ^ CLEANUP_MIX;
}

bool arena__cleaning(const arena *a)
{
    return !a->lazy && (arena__cold(a)->flags & ARENA__CLEANING);
}

static void unlink_record(struct arena_cleanup *c)
{
    *c->link = c->next;
    if (c->next)
        c->next->link = c->link;
}

arena_cleanup *arena_cleanup_push(arena *a, arena_cleanup_fn *fn, void *ctx)
{
    struct arena_cleanup *c, **head;

    if (!fn) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CLEANUP,
                      "arena_cleanup_push: NULL function (arena %p)", (void *)a);
        return NULL;
    }
    if (arena__cleaning(a)) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CLEANUP,
                      "arena_cleanup_push: arena %p is running its cleanups (a push from one of "
                      "them)",
                      (void *)a);
        return NULL;
    }
    /* A free block first (a cancelled record's, say) only where there are
     * any: otherwise the inline bump, with no call.  (A lazy arena has none,
     * and a record that does not fit leaves it as it was, unwritten.) */
    if (a->pending & ARENA__PENDING_REUSE)
        c = (struct arena_cleanup *)arena_alloc_reuse(a, sizeof *c);
    else
        c = (struct arena_cleanup *)arena_alloc(a, sizeof *c);
    if (!c)
        return NULL;
    /* The head is in the bookkeeping, which a lazy arena has not written. */
    if (a->lazy)
        arena__wake(a);
    head = &arena__cold(a)->cleanups;
    c->fn = fn;
    c->ctx = ctx;
    c->next = *head;
    c->link = head;
    c->serial = a->saves;
    c->check = key(c, a);
    if (c->next)
        c->next->link = &c->next;
    *head = c;
    a->pending |= ARENA__PENDING_CLEANUP;
    return c;
}

/* arena_cleanup_cancel(); `note`: the record's bytes go back as
 * arena_free() gives them (the size before noted as the batch's high
 * point), else as arena__free_placed() does. */
static void cancel(arena *a, arena_cleanup *c, bool note)
{
    if (!c)
        return;
    if (c->check == (key(c, a) ^ SPENT)) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_CLEANUP,
                      "arena_cleanup_cancel: cleanup %p of arena %p has already run or been "
                      "cancelled",
                      (void *)c, (void *)a);
        return;
    }
    if (c->check != key(c, a) || a->lazy || !(a->pending & ARENA__PENDING_CLEANUP)) {
        arena__report(ARENA__ABOUT_ARENA(a), ARENA_ERR_FOREIGN_POINTER,
                      "arena_cleanup_cancel: %p is not a cleanup of arena %p (or its record "
                      "was overwritten)",
                      (void *)c, (void *)a);
        return;
    }
    unlink_record(c);
    c->check ^= SPENT;
    if (!arena__cold(a)->cleanups && !arena__cleaning(a))
        a->pending &= ~(uint32_t)ARENA__PENDING_CLEANUP;
    if (note)
        arena_free(a, c, sizeof *c);
    else
        arena__free_placed(a, c, sizeof *c);
}

void arena_cleanup_cancel(arena *a, arena_cleanup *c) { cancel(a, c, true); }

void arena__cleanup_drop(arena *a, arena_cleanup *c) { cancel(a, c, false); }

uint64_t arena__cleanup_serial(const arena_cleanup *c) { return c->serial; }

bool arena__cleanups_run(arena *a, uint64_t serial, const char *caller)
{
    struct arena__cold *k = arena__cold(a);
    struct arena_cleanup *c;

    if (k->flags & ARENA__CLEANING)
        return !arena__misused(ARENA__ABOUT_ARENA(a), ARENA_ERR_CLEANUP,
                               "%s: arena %p is running its cleanups (a call "
                               "from one of them)",
                               caller, (void *)a);
    k->flags |= ARENA__CLEANING;
    while ((c = k->cleanups) != NULL && c->serial >= serial) {
        if (c->check != key(c, a)) {
            (void)arena__corrupt(ARENA__ABOUT_ARENA(a),
                                 "%s: the record of cleanup %p of arena %p was overwritten; "
                                 "it and the older cleanups are dropped",
                                 caller, (void *)c, (void *)a);
            k->cleanups = NULL;
            break;
        }
        unlink_record(c);
        c->check ^= SPENT;
        c->fn(c->ctx);
    }
    k->flags &= ~(uint32_t)ARENA__CLEANING;
    if (!k->cleanups)
        a->pending &= ~(uint32_t)ARENA__PENDING_CLEANUP;
    return true;
}
