-- Migration 005: limiter blocks and state operations (DESIGN §3.5; the Store contract's
-- limiterAdjust): a block column on limiter_state, limiter_take again with the limits' block
-- lengths (a refusal of a limit with one blocks its row; a take reads the block first), and
-- limiter_adjust (get, delete, set, reward, penalty, block) in one statement. The model is
-- src/windows/limits/adjust.ts with the memory store's adjust (src/store/memory/limiter.ts); the
-- conformance suite limiter-adjust runs both.

-- When the row's block ends (the decision time's clock, ms); 0: none. A row may hold a block and
-- no state (expires_at 0: decides as no state): its code is the limit's all the same, so the
-- take's clean-up of '' rows keeps it.
ALTER TABLE __schema__.limiter_state ADD COLUMN blocked_until bigint NOT NULL DEFAULT 0;

-- As migration 002's limiter_take (kept beside it: a process of an earlier version, during a
-- rolling upgrade, still calls that one, and blocks nothing), with `blocks` (per limit, ms; 0: none): a limit with a block
-- length reads its row's block first (blocked: refused, remaining 0, until the block's end), and
-- when the take is refused, each such limit that refused (not blocked already, and not for a
-- cost it can never admit) is blocked for its length; its verdict then names the block's end.
-- Remaining never answers below 0 (a penalty may take usage past the limit).
CREATE FUNCTION __schema__.limiter_take(
  keys text[], codes text[], limits bigint[], windows bigint[], params bigint[],
  cost bigint, t bigint, deadline bigint, slack bigint, blocks bigint[])
RETURNS TABLE (o_now bigint, o_db bigint, o_outcome int, o_allowed boolean[],
  o_remaining bigint[], o_reset bigint[], o_retry bigint[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n int := cardinality(keys);
  db_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  created int;
  r record;
  p int;
  live boolean[] := array_fill(false, ARRAY[n]);
  blk bigint[] := array_fill(0::bigint, ARRAY[n]);
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
  until_at bigint;
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
    SELECT s.key, s.code, s.a, s.b, s.xs, s.ys, s.expires_at, s.sweep_at, s.blocked_until
      FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) ORDER BY s.key FOR UPDATE
  LOOP
    p := array_position(keys, r.key);
    IF r.code = codes[p] AND r.expires_at > o_now AND r.sweep_at > db_now THEN
      live[p] := true; sa[p] := r.a; sb[p] := r.b; sxs[p] := r.xs::text; sys[p] := r.ys::text;
    END IF;
    IF r.blocked_until > o_now AND r.sweep_at > db_now THEN blk[p] := r.blocked_until; END IF;
  END LOOP;

  IF deadline IS NOT NULL AND floor(extract(epoch FROM clock_timestamp()) * 1000) > deadline THEN
    RAISE EXCEPTION 'limiter_take reached PostgreSQL past its deadline: not decided, not charged'
      USING ERRCODE = 'OFL01';
  END IF;

  FOR i IN 1..n LOOP
    IF blocks[i] > 0 AND blk[i] > 0 THEN
      o_allowed[i] := false; o_remaining[i] := 0; o_reset[i] := blk[i]; o_retry[i] := blk[i] - o_now;
      o_outcome := 0;
      CONTINUE;
    END IF;
    SELECT * INTO d FROM __schema__.limiter_decide(codes[i], limits[i], windows[i], params[i],
      cost, o_now, live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
    o_allowed[i] := d.allowed; o_remaining[i] := greatest(0, d.remaining); o_reset[i] := d.reset_at;
    o_retry[i] := d.retry;
    IF NOT d.allowed THEN o_outcome := 0; END IF;
    w_a[i] := d.n_a; w_b[i] := d.n_b; w_xs[i] := d.n_xs::text; w_ys[i] := d.n_ys::text;
    w_exp[i] := d.n_expires;
  END LOOP;

  IF o_outcome = 0 THEN
    FOR i IN 1..n LOOP
      IF o_allowed[i] THEN
        SELECT * INTO d FROM __schema__.limiter_decide(codes[i], limits[i], windows[i],
          params[i], 0, o_now, live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
        o_remaining[i] := d.remaining; o_reset[i] := d.reset_at;
      ELSIF blocks[i] > 0 AND blk[i] = 0 AND o_retry[i] >= 0 THEN
        until_at := o_now + blocks[i];
        UPDATE __schema__.limiter_state AS s
          SET blocked_until = until_at, code = codes[i],
              expires_at = CASE WHEN s.code = '' THEN 0 ELSE s.expires_at END,
              sweep_at = greatest(CASE WHEN s.code = '' THEN 0 ELSE s.sweep_at END,
                db_now + blocks[i] + slack)
          WHERE s.key = keys[i];
        o_reset[i] := greatest(o_reset[i], until_at);
        o_retry[i] := greatest(o_retry[i], blocks[i]);
      END IF;
    END LOOP;
  ELSIF cost > 0 THEN
    FOR i IN 1..n LOOP
      UPDATE __schema__.limiter_state AS s
        SET code = codes[i], a = coalesce(w_a[i], 0), b = coalesce(w_b[i], 0), xs = w_xs[i]::bigint[], ys = w_ys[i]::bigint[],
            expires_at = w_exp[i], sweep_at = db_now + greatest(1, w_exp[i] - o_now) + slack
        WHERE s.key = keys[i];
    END LOOP;
  END IF;
  IF created > 0 THEN
    DELETE FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) AND s.code = '';
  END IF;
  RETURN NEXT;
END $$;

-- One state operation on the rows `keys` (limit i: codes[i], limits[i], windows[i], params[i]),
-- locked as limiter_take locks them. `op`: 'get', 'delete', 'set', 'reward', 'penalty', 'block';
-- `points` (set, reward, penalty), `block_ms` (block; 0 lifts), `t` (NULL: the database's
-- clock), `slack` as in limiter_take. Returns the status (0 done; 1 refused and nothing changed:
-- a penalty would take a limit's usage x window past 2^52), the time, and per limit the state
-- after the operation (delete: before it): usage, remaining, resetAt, blockedUntil (0: none).
-- Usage is what a decision with the capacity raised to cap = floor(2^52 / window) answers,
-- cap - remaining (adjust.ts): a penalty is charged on that capped limit, so it may pass the
-- limit but not the cap; a reward leaves GCRA's arrival time moved back exactly, any other state
-- replaced by the usage left charged at `t` on no state.
CREATE FUNCTION __schema__.limiter_adjust(
  keys text[], codes text[], limits bigint[], windows bigint[], params bigint[],
  op text, points bigint, block_ms bigint, t bigint, slack bigint)
RETURNS TABLE (o_status int, o_now bigint, o_used bigint[], o_remaining bigint[], o_reset bigint[],
  o_blocked bigint[])
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n int := cardinality(keys);
  db_now bigint := floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint;
  r record;
  p int;
  live boolean[] := array_fill(false, ARRAY[n]);
  blk bigint[] := array_fill(0::bigint, ARRAY[n]);
  sa bigint[] := array_fill(0::bigint, ARRAY[n]);
  sb bigint[] := array_fill(0::bigint, ARRAY[n]);
  sxs text[] := array_fill(NULL::text, ARRAY[n]);
  sys text[] := array_fill(NULL::text, ARRAY[n]);
  cap bigint; cl bigint; cp bigint;
  d record;
  i int;
  sum bigint; carry bigint; q bigint; f bigint; left_over bigint;
  empty boolean; wrote boolean;
BEGIN
  o_now := coalesce(t, db_now);
  o_status := 0;
  o_used := array_fill(0::bigint, ARRAY[n]);
  o_remaining := array_fill(0::bigint, ARRAY[n]);
  o_reset := array_fill(0::bigint, ARRAY[n]);
  o_blocked := array_fill(0::bigint, ARRAY[n]);
  IF n = 0 THEN RETURN NEXT; RETURN; END IF;

  INSERT INTO __schema__.limiter_state AS s (key, code, expires_at, sweep_at)
    SELECT k, '', 0, 0 FROM unnest(keys) AS k ORDER BY k COLLATE "C"
    ON CONFLICT (key) DO NOTHING;
  FOR r IN
    SELECT s.key, s.code, s.a, s.b, s.xs, s.ys, s.expires_at, s.sweep_at, s.blocked_until
      FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) ORDER BY s.key FOR UPDATE
  LOOP
    p := array_position(keys, r.key);
    IF r.code = codes[p] AND r.expires_at > o_now AND r.sweep_at > db_now THEN
      live[p] := true; sa[p] := r.a; sb[p] := r.b; sxs[p] := r.xs::text; sys[p] := r.ys::text;
    END IF;
    IF r.blocked_until > o_now AND r.sweep_at > db_now THEN blk[p] := r.blocked_until; END IF;
  END LOOP;

  IF op = 'penalty' THEN
    -- All or nothing: every limit is checked before any is charged.
    FOR i IN 1..n LOOP
      cap := 4503599627370496 / windows[i];
      cl := CASE WHEN codes[i] = 'g' THEN limits[i] ELSE cap END;
      cp := CASE WHEN codes[i] = 'g' THEN cap ELSE params[i] END;
      SELECT * INTO d FROM __schema__.limiter_decide(codes[i], cl, windows[i], cp, points, o_now,
        live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
      IF NOT d.allowed THEN
        o_status := 1;
        DELETE FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys) AND s.code = '';
        RETURN NEXT;
        RETURN;
      END IF;
    END LOOP;
  END IF;

  FOR i IN 1..n LOOP
    cap := 4503599627370496 / windows[i];
    cl := CASE WHEN codes[i] = 'g' THEN limits[i] ELSE cap END;
    cp := CASE WHEN codes[i] = 'g' THEN cap ELSE params[i] END;
    empty := false; wrote := false;
    IF op = 'delete' THEN
      NULL; -- answered as it was, below, then dropped
    ELSIF op = 'block' THEN
      blk[i] := CASE WHEN block_ms > 0 THEN o_now + block_ms ELSE 0 END;
      UPDATE __schema__.limiter_state AS s
        SET blocked_until = blk[i], code = codes[i],
            expires_at = CASE WHEN s.code = '' THEN 0 ELSE s.expires_at END,
            sweep_at = greatest(CASE WHEN s.code = '' THEN 0 ELSE s.sweep_at END, db_now + block_ms + slack)
        WHERE s.key = keys[i];
    ELSIF op = 'penalty' THEN
      IF points > 0 THEN
        SELECT * INTO d FROM __schema__.limiter_decide(codes[i], cl, windows[i], cp, points, o_now,
          live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
        wrote := true;
      END IF;
    ELSIF op = 'set' THEN
      empty := true;
      IF points > 0 THEN
        SELECT * INTO d FROM __schema__.limiter_decide(codes[i], cl, windows[i], cp, points, o_now,
          false, 0, 0, NULL, NULL);
        wrote := true;
      END IF;
    ELSIF op = 'reward' THEN
      empty := true;
      IF codes[i] = 'g' THEN
        IF live[i] AND sa[i] >= o_now THEN
          sum := sb[i] - points * windows[i];
          carry := __schema__.limiter_floordiv(sum, limits[i]);
          q := sa[i] + carry;
          f := sum - carry * limits[i];
          IF q > o_now OR (q = o_now AND f > 0) THEN
            UPDATE __schema__.limiter_state AS s
              SET code = codes[i], a = q, b = f, xs = NULL, ys = NULL,
                  expires_at = q + CASE WHEN f > 0 THEN 1 ELSE 0 END,
                  sweep_at = greatest(db_now + greatest(1, q + 1 - o_now), db_now + blk[i] - o_now) + slack
              WHERE s.key = keys[i];
            live[i] := true; sa[i] := q; sb[i] := f;
            empty := false;
          END IF;
        END IF;
      ELSE
        SELECT * INTO d FROM __schema__.limiter_decide(codes[i], cl, windows[i], cp, 0, o_now,
          live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
        left_over := cap - d.remaining - points;
        IF left_over > 0 THEN
          SELECT * INTO d FROM __schema__.limiter_decide(codes[i], cl, windows[i], cp, left_over,
            o_now, false, 0, 0, NULL, NULL);
          wrote := true;
        END IF;
      END IF;
    END IF;
    IF wrote THEN
      UPDATE __schema__.limiter_state AS s
        SET code = codes[i], a = coalesce(d.n_a, 0), b = coalesce(d.n_b, 0), xs = d.n_xs, ys = d.n_ys,
            expires_at = d.n_expires,
            sweep_at = greatest(db_now + greatest(1, d.n_expires - o_now), db_now + blk[i] - o_now) + slack
        WHERE s.key = keys[i];
      live[i] := true; sa[i] := coalesce(d.n_a, 0); sb[i] := coalesce(d.n_b, 0);
      sxs[i] := d.n_xs::text; sys[i] := d.n_ys::text;
    ELSIF empty THEN
      -- No usage left: the row decides as no state (its block, if any, stays).
      UPDATE __schema__.limiter_state AS s SET expires_at = 0 WHERE s.key = keys[i];
      live[i] := false;
    END IF;
    -- The state as it is now (delete: before it).
    SELECT * INTO d FROM __schema__.limiter_decide(codes[i], cl, windows[i], cp, 0, o_now,
      live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
    o_used[i] := cap - d.remaining;
    SELECT * INTO d FROM __schema__.limiter_decide(codes[i], limits[i], windows[i], params[i], 0,
      o_now, live[i], sa[i], sb[i], sxs[i]::bigint[], sys[i]::bigint[]);
    o_remaining[i] := greatest(0, d.remaining); o_reset[i] := d.reset_at;
    o_blocked[i] := CASE WHEN blk[i] > o_now THEN blk[i] ELSE 0 END;
  END LOOP;

  IF op = 'delete' THEN
    DELETE FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys);
  ELSE
    -- The rows inserted only to lock, and rows left with neither state nor block (a block that
    -- ended stays until its sweep time, as a state does: a clock that steps back reads it again).
    DELETE FROM __schema__.limiter_state AS s WHERE s.key = ANY (keys)
      AND (s.code = '' OR (s.expires_at = 0 AND s.blocked_until = 0));
  END IF;
  RETURN NEXT;
END $$;
