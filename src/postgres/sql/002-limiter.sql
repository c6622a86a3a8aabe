-- Migration 002: the limiter of the Postgres store (DESIGN §3.5): one row of state per limiter
-- key, and limiter_take, which decides one multi-limit take in one statement (all limits admit
-- the cost and are charged, or none is). The math is src/limiter/{fixed-window,sliding-window,
-- sliding-log,gcra}.ts line for line, in integers (bigint; numeric where a product can pass
-- 2^63); test/integration/postgres-limiter-model.test.ts runs both on the same sequences and
-- requires identical answers.

-- One limiter key's state. `code` is the algorithm whose state the row holds ('f' fixed window,
-- 'w' sliding window, 'g' GCRA, 'd' sliding log), or '' for a row limiter_take inserted only to
-- lock the key (it deletes it again before it returns unless it charged the key: a committed row
-- never has ''). The columns by algorithm:
--   f  a = window start, b = count
--   w  a = newest bucket index, xs = the B + 1 bucket counts, oldest first (B = window / bucket)
--   g  a = q, b = f: the theoretical arrival time q + f / limit ms
--   d  a = total cost of xs/ys, xs = entry times ascending, ys = their costs (one entry per
--      admitted request; entries that left the window are dropped whenever the row is written)
-- `expires_at` (decision time, ms): from then on the state decides as no state (the math's
-- expiresAt). `sweep_at` (the database clock, ms): when the row may be deleted, expires_at's
-- distance from the decision time plus the slack (src/limiter/time.ts), as Redis's TTL; a row
-- past it decides as no state too, so clean-up never changes an answer.
-- COLLATE "C": keys compare bytewise, so a namespace's keys are one range of the primary key
-- (limiter_reset).
CREATE TABLE __schema__.limiter_state (
  key text COLLATE "C" PRIMARY KEY,
  code text NOT NULL,
  a bigint NOT NULL DEFAULT 0,
  b bigint NOT NULL DEFAULT 0,
  xs bigint[],
  ys bigint[],
  expires_at bigint NOT NULL,
  sweep_at bigint NOT NULL
);
CREATE INDEX limiter_state_sweep ON __schema__.limiter_state (sweep_at);

-- floor(a / b) and ceil(a / b) for b > 0 (bigint `/` truncates towards zero).
CREATE FUNCTION __schema__.limiter_floordiv(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$ SELECT CASE WHEN a >= 0 THEN a / b ELSE -((b - 1 - a) / b) END $$;

CREATE FUNCTION __schema__.limiter_ceildiv(a bigint, b bigint) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$ SELECT CASE WHEN a <= 0 THEN -((-a) / b) ELSE (a + b - 1) / b END $$;

-- One limit's decision at `t` against its live state (`live` false: no state), as the math's
-- `decide`, and the state `commit` would write (n_*: only read when the whole take is charged).
-- retry -1: never (the cost exceeds what the limit can ever admit at once).
CREATE FUNCTION __schema__.limiter_decide(
  code text, lim bigint, win bigint, param bigint, cost bigint, t bigint,
  live boolean, sa bigint, sb bigint, sxs bigint[], sys bigint[],
  OUT allowed boolean, OUT remaining bigint, OUT reset_at bigint, OUT retry bigint,
  OUT n_a bigint, OUT n_b bigint, OUT n_xs bigint[], OUT n_ys bigint[], OUT n_expires bigint)
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
  tm bigint; st bigint; used bigint; after bigint;
  g bigint; nb int; c bigint; r bigint; recent bigint; old bigint; scaled bigint; cnt bigint[];
  shift bigint; j int; s int; room bigint; sl bigint; rr bigint; strt bigint;
  q bigint; f bigint; total bigint; carry bigint; q2 bigint; f2 bigint; ahead numeric; held numeric;
  n int; i int; newest bigint; at bigint; cutoff bigint; need bigint; freed bigint; last bigint;
BEGIN
  retry := 0;
  IF code = 'f' THEN
    -- fixed-window.ts: a clock that steps back stays in the newest window seen.
    tm := CASE WHEN live AND t < sa THEN sa ELSE t END;
    st := __schema__.limiter_floordiv(tm, win) * win;
    used := CASE WHEN live AND sa = st THEN sb ELSE 0 END;
    IF used + cost <= lim THEN
      after := used + cost;
      allowed := true; remaining := lim - after;
      reset_at := CASE WHEN after > 0 THEN st + win ELSE tm END;
      n_a := st; n_b := after; n_expires := st + win;
    ELSE
      allowed := false; remaining := lim - used;
      reset_at := CASE WHEN used > 0 THEN st + win ELSE tm END;
      retry := CASE WHEN cost > lim THEN -1 ELSE st + win - t END;
    END IF;
    RETURN;
  END IF;

  IF code = 'w' THEN
    -- sliding-window.ts. cnt[j + 1] is bucket c - B + j of the view (PostgreSQL arrays start at 1).
    g := param; nb := (win / g)::int;
    tm := CASE WHEN live AND t < sa * g THEN sa * g ELSE t END;
    c := __schema__.limiter_floordiv(tm, g);
    cnt := array_fill(0::bigint, ARRAY[nb + 1]);
    IF live THEN
      shift := c - sa; -- >= 0: tm never lies below the newest bucket seen
      FOR j IN shift..nb LOOP cnt[j - shift + 1] := sxs[j + 1]; END LOOP;
    END IF;
    r := tm - c * g;
    recent := 0;
    FOR j IN 1..nb LOOP recent := recent + cnt[j + 1]; END LOOP;
    old := cnt[1];
    scaled := g * recent + old * (g - r);
    -- cost > lim never fits (scaled >= 0): decided first, so cost * g cannot overflow.
    allowed := cost <= lim;
    IF allowed THEN allowed := scaled + cost * g <= lim * g; END IF;
    -- resetOf: when the newest non-empty bucket has left the window, with no more requests.
    reset_at := tm;
    FOR j IN REVERSE nb..0 LOOP
      IF cnt[j + 1] > 0 THEN reset_at := (c + j + 1) * g; EXIT; END IF;
    END LOOP;
    IF allowed THEN
      remaining := __schema__.limiter_floordiv(lim * g - scaled - cost * g, g);
      -- With the cost in the newest bucket, that bucket decides the reset (when cost > 0).
      IF cost > 0 THEN reset_at := (c + nb + 1) * g; END IF;
      cnt[nb + 1] := cnt[nb + 1] + cost;
      n_a := c; n_xs := cnt; n_expires := (c + nb + 1) * g;
      RETURN;
    END IF;
    remaining := greatest(0, __schema__.limiter_floordiv(lim * g - scaled, g));
    IF cost > lim THEN retry := -1; RETURN; END IF;
    -- retryAt: the first whole ms at which the estimate is at most lim - cost, with no more requests.
    room := lim - cost;
    s := 0;
    LOOP
      old := CASE WHEN s <= nb THEN cnt[s + 1] ELSE 0 END;
      strt := CASE WHEN s = 0 THEN r ELSE 0 END;
      sl := room * g - g * recent;
      IF sl >= 0 THEN
        rr := CASE WHEN old = 0 THEN strt ELSE greatest(strt, g - __schema__.limiter_floordiv(sl, old)) END;
        IF rr <= g - 1 THEN retry := (c + s) * g + rr - t; RETURN; END IF;
      END IF;
      IF s + 1 <= nb THEN recent := recent - cnt[s + 2]; END IF;
      s := s + 1;
    END LOOP;
  END IF;

  IF code = 'g' THEN
    -- gcra.ts; param is the burst. `ahead` and `held` in numeric: (q - t) * lim passes 2^63 when
    -- a clock stepped far back.
    IF live AND sa >= t THEN q := sa; f := sb; ELSE q := t; f := 0; END IF;
    IF cost <= param THEN
      total := f + cost * win;
      carry := __schema__.limiter_floordiv(total, lim);
      q2 := q + carry;
      f2 := total - carry * lim;
      ahead := (q2 - t)::numeric * lim + f2;
      IF ahead <= param * win THEN
        allowed := true;
        remaining := __schema__.limiter_floordiv(param * win - ahead::bigint, win);
        n_a := q2; n_b := f2; n_expires := CASE WHEN f2 > 0 THEN q2 + 1 ELSE q2 END;
        reset_at := CASE WHEN cost > 0 THEN n_expires WHEN f > 0 THEN q + 1 ELSE q END;
        RETURN;
      END IF;
    END IF;
    -- cost > burst: (q - t) * lim + f + cost * win > burst * win, refused for good.
    allowed := false;
    held := (q - t)::numeric * lim + f;
    remaining := greatest(0, floor((param * win - held) / win))::bigint;
    reset_at := CASE WHEN f > 0 THEN q + 1 ELSE q END;
    retry := CASE WHEN cost > param THEN -1
      ELSE q + __schema__.limiter_ceildiv(f - (param - cost) * win, lim) - t END;
    RETURN;
  END IF;

  -- 'd': sliding-log.ts. A live log holds at least one entry younger than the window.
  IF NOT live THEN
    IF cost <= lim THEN
      allowed := true; remaining := lim - cost;
      reset_at := CASE WHEN cost > 0 THEN t + win ELSE t END;
      n_a := cost; n_xs := ARRAY[t]; n_ys := ARRAY[cost]; n_expires := t + win;
    ELSE
      allowed := false; remaining := lim; reset_at := t; retry := -1;
    END IF;
    RETURN;
  END IF;
  n := cardinality(sxs);
  newest := sxs[n];
  -- A clock behind the newest entry decides and records at that entry's time.
  at := greatest(newest, t);
  cutoff := at - win; -- an entry at x counts while x > at - window
  total := sa;
  i := 1;
  WHILE i <= n AND sxs[i] <= cutoff LOOP
    total := total - sys[i];
    i := i + 1;
  END LOOP;
  IF i > n THEN newest := NULL; END IF;
  IF total + cost <= lim THEN
    allowed := true; remaining := lim - total - cost;
    last := CASE WHEN cost > 0 THEN at ELSE newest END;
    reset_at := CASE WHEN last IS NULL THEN t ELSE last + win END;
    n_a := total + cost;
    n_xs := sxs[i:n] || at; n_ys := sys[i:n] || cost;
    n_expires := at + win;
    RETURN;
  END IF;
  allowed := false; remaining := lim - total; reset_at := newest + win; retry := -1;
  IF cost <= lim THEN
    -- Drop the oldest live entries until the rest plus this cost fits: the last one dropped decides.
    need := total + cost - lim;
    freed := 0;
    WHILE freed < need LOOP
      freed := freed + sys[i];
      i := i + 1;
    END LOOP;
    retry := sxs[i - 1] + win - t;
  END IF;
END $$;

-- One multi-limit take (DESIGN §3.5), in one statement: limit i is (codes[i], limits[i],
-- windows[i], params[i]) on keys[i] (keys distinct: the client checks). `t`: the decision time,
-- NULL for the database's clock. `deadline` (database ms, NULL: none): past it the take's caller
-- has been answered without the store, so the take is not decided and charges nothing (it raises
-- SQLSTATE OFL01 and rolls back); it is checked once every key is locked, so a take that waited
-- on a lock past it cannot charge. `slack`: ms a written row is kept past its expiry (src/limiter/time.ts).
-- Returns the decision time, the database's clock when the statement began deciding (the client
-- learns its offset from it), the outcome (1 allowed, and charged when cost > 0; 0 refused,
-- nothing charged) and per limit, in order: allowed, remaining, resetAt, retryAfterMs (-1: never).
--
-- Locking, under READ COMMITTED: first every key's row is made to exist (an empty '' row for a
-- new key, inserted in key order, ON CONFLICT DO NOTHING: a concurrent inserter of the same key
-- waits for the other to commit), then all rows are locked FOR UPDATE in key order. Two takes
-- lock common keys in one order, so they never deadlock; and a new key has a row to lock, so two
-- first takes of one key cannot both decide on no state.
CREATE FUNCTION __schema__.limiter_take(
  keys text[], codes text[], limits bigint[], windows bigint[], params bigint[],
  cost bigint, t bigint, deadline bigint, slack bigint)
RETURNS TABLE (o_now bigint, o_db bigint, o_outcome int, o_allowed boolean[],
  o_remaining bigint[], o_reset bigint[], o_retry bigint[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n int := cardinality(keys);
  db_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  created int;
  r record;
  p int;
  -- Each limit's live state as read (sxs/sys: its arrays as text, since a bigint[][] cannot be
  -- ragged) and the state a charge writes (w_*).
  live boolean[] := array_fill(false, ARRAY[n]);
  sa bigint[] := array_fill(0::bigint, ARRAY[n]);
  sb bigint[] := array_fill(0::bigint, ARRAY[n]);
  sxs text[] := array_fill(NULL::text, ARRAY[n]);
  sys text[] := array_fill(NULL::text, ARRAY[n]);
  w_a bigint[] := array_fill(0::bigint, ARRAY[n]);
  w_b bigint[] := array_fill(0::bigint, ARRAY[n]);
  w_xs text[] := array_fill(NULL::text, ARRAY[n]);
  w_ys text[] := array_fill(NULL::text, ARRAY[n]);
  w_exp bigint[] := array_fill(0::bigint, ARRAY[n]);
  d record;
  i int;
BEGIN
  o_now := coalesce(t, db_now);
  o_db := db_now;
  o_outcome := 1;
  o_allowed := array_fill(false, ARRAY[n]);
  o_remaining := array_fill(0::bigint, ARRAY[n]);
  o_reset := array_fill(0::bigint, ARRAY[n]);
  o_retry := array_fill(0::bigint, ARRAY[n]);

  INSERT INTO __schema__.limiter_state AS s (key, code, expires_at, sweep_at)
    SELECT k, '', 0, 0 FROM unnest(keys) AS k ORDER BY k COLLATE "C"
    ON CONFLICT (key) DO NOTHING;
  GET DIAGNOSTICS created = ROW_COUNT;
  FOR r IN
    SELECT s.key, s.code, s.a, s.b, s.xs, s.ys, s.expires_at, s.sweep_at
      FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) ORDER BY s.key FOR UPDATE
  LOOP
    p := array_position(keys, r.key);
    -- A state decides while it counts (memory-backend.ts liveState) and its row is not due for
    -- deletion (a Redis key past its TTL is gone); a row of another algorithm is no state of this one.
    IF r.code = codes[p] AND r.expires_at > o_now AND r.sweep_at > db_now THEN
      live[p] := true; sa[p] := r.a; sb[p] := r.b; sxs[p] := r.xs::text; sys[p] := r.ys::text;
    END IF;
  END LOOP;

  IF deadline IS NOT NULL AND floor(extract(epoch FROM clock_timestamp()) * 1000) > deadline THEN
    -- Rolled back rather than answered, so the empty rows inserted above go too.
    RAISE EXCEPTION 'limiter_take reached PostgreSQL past its deadline: not decided, not charged'
      USING ERRCODE = 'OFL01';
  END IF;

  FOR i IN 1..n LOOP
    SELECT * INTO d FROM __schema__.limiter_decide(codes[i], limits[i], windows[i], params[i],
      cost, o_now, live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
    o_allowed[i] := d.allowed; o_remaining[i] := d.remaining; o_reset[i] := d.reset_at;
    o_retry[i] := d.retry;
    IF NOT d.allowed THEN o_outcome := 0; END IF;
    w_a[i] := d.n_a; w_b[i] := d.n_b; w_xs[i] := d.n_xs::text; w_ys[i] := d.n_ys::text;
    w_exp[i] := d.n_expires;
  END LOOP;

  IF o_outcome = 0 THEN
    -- Nothing is charged: a limit that would have admitted reports itself as it is now (its
    -- answer to a cost of 0), not as it would have been after this request.
    FOR i IN 1..n LOOP
      IF o_allowed[i] THEN
        SELECT * INTO d FROM __schema__.limiter_decide(codes[i], limits[i], windows[i],
          params[i], 0, o_now, live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
        o_remaining[i] := d.remaining; o_reset[i] := d.reset_at;
      END IF;
    END LOOP;
  ELSIF cost > 0 THEN
    FOR i IN 1..n LOOP
      -- Kept past its expiry by the slack, on the database's clock (Redis's TTL: the distance
      -- to the expiry, at least 1 ms, plus the slack).
      UPDATE __schema__.limiter_state AS s
        SET code = codes[i], a = coalesce(w_a[i], 0), b = coalesce(w_b[i], 0), xs = w_xs[i]::bigint[], ys = w_ys[i]::bigint[],
            expires_at = w_exp[i], sweep_at = db_now + greatest(1, w_exp[i] - o_now) + slack
        WHERE s.key = keys[i];
    END LOOP;
  END IF;
  IF created > 0 THEN
    -- The empty rows this take inserted and did not charge (every committed row has a state).
    DELETE FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) AND s.code = '';
  END IF;
  RETURN NEXT;
END $$;

-- limiterDelete: drops these keys' rows; counts those that held a state (as a Redis key that
-- still exists: not past its sweep time).
CREATE FUNCTION __schema__.limiter_delete(keys text[]) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  WITH gone AS (
    DELETE FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) RETURNING s.sweep_at
  )
  SELECT count(*) FROM gone
    WHERE sweep_at > floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;

-- limiterReset: drops every row of a namespace, the keys `{<ns>:...` and `{<ns>}...`
-- (src/limiter/keys.ts): two ranges of the "C"-collated key, [p, p with its last byte + 1),
-- given by the client; counts as limiter_delete does.
CREATE FUNCTION __schema__.limiter_reset(lo1 text, hi1 text, lo2 text, hi2 text) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  WITH gone AS (
    DELETE FROM __schema__.limiter_state AS s
      WHERE (s.key >= lo1 COLLATE "C" AND s.key < hi1 COLLATE "C")
         OR (s.key >= lo2 COLLATE "C" AND s.key < hi2 COLLATE "C")
      RETURNING s.sweep_at
  )
  SELECT count(*) FROM gone
    WHERE sweep_at > floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
$$;

-- Clean-up: deletes at most `lim` rows past their sweep time, oldest first. SKIP LOCKED: a row a
-- take holds is being decided (and rewritten) now; it is left for the next call.
CREATE FUNCTION __schema__.limiter_cleanup(lim int) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
  WITH due AS (
    SELECT s.key FROM __schema__.limiter_state AS s
      WHERE s.sweep_at <= floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
      ORDER BY s.sweep_at LIMIT lim FOR UPDATE SKIP LOCKED
  ), gone AS (
    DELETE FROM __schema__.limiter_state AS s USING due WHERE s.key = due.key RETURNING 1
  )
  SELECT count(*) FROM gone
$$;
