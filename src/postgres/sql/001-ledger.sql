-- Migration 001: the ledger of the Postgres store (src/postgres/ledger-ops.ts calls these
-- functions, one statement per operation). Semantics: the memory store (src/store/memory-store.ts),
-- with the journal's retention per owner, as on Redis.
--
-- Every write locks its owner's row first (ledger_owner, FOR UPDATE), then touches only rows of
-- that owner (its scope shares, its journal): under READ COMMITTED, two applies of one owner take
-- turns, applies of different owners never wait for each other, and no two operations lock rows
-- in opposite orders (no deadlock among the store's own statements).
--
-- Names, owners, signatures, scopes and fields are `text COLLATE "C"`, as the idempotency
-- table's keys: byte equality whatever the database's collation, and memcmp comparisons in every
-- btree an apply writes (a linguistic collation pays strcoll per comparison, and the keys are
-- compared only for equality; the one key order used, ledger_cleanup's walk, is any fixed order).
--
-- Amounts and orders are `numeric` (exact, unbounded), crossing the wire as decimal text. What
-- goes back to the client is text or JSON text, so no type parser an application installed on its
-- pg driver (int8 as number, say) can change a value on the way.

-- One row per owner: its balances, its window, its journal counter and what retention dropped.
CREATE TABLE __schema__.ledger_owner (
  ledger text COLLATE "C" NOT NULL,
  owner text COLLATE "C" NOT NULL,
  -- The owner's last journal seq (1, 2, 3, ...): the number of entries it booked.
  seq bigint NOT NULL DEFAULT 0,
  -- field -> balance as a decimal string: one row holds everything an apply returns, and a
  -- string keeps the amount exact through JSON (a JSON number would not).
  balances jsonb NOT NULL DEFAULT '{}',
  -- The window, oldest first, with each signature's order (NULL: none, or the horizon is off).
  sigs text[] NOT NULL DEFAULT '{}',
  orders numeric[] NOT NULL DEFAULT '{}',
  -- The highest order ever evicted from the window (NULL while none was).
  horizon numeric,
  -- Every journal row of the owner below this seq is gone (retention drops the oldest first);
  -- the rows from here to `seq` may still be there.
  kept_from bigint NOT NULL DEFAULT 1,
  -- What retention dropped (or never wrote, with a journal of 0 entries), for ledger_apply's
  -- resolve: the highest order among those entries, and whether one had no order. Both unset:
  -- nothing dropped, so absence from the journal proves an entry new.
  dropped_order numeric,
  dropped_unordered boolean NOT NULL DEFAULT false,
  PRIMARY KEY (ledger, owner)
);

-- Each owner's share of a scope's totals: a scope's totals are the sum of its owners' shares.
-- Per owner, so an apply writes only rows its owner's lock already guards: applies of many
-- owners in one scope (a room) never queue on one hot totals row.
CREATE TABLE __schema__.ledger_scope_share (
  ledger text COLLATE "C" NOT NULL,
  scope text COLLATE "C" NOT NULL,
  owner text COLLATE "C" NOT NULL,
  field text COLLATE "C" NOT NULL,
  amount numeric NOT NULL,
  PRIMARY KEY (ledger, scope, owner, field)
);

-- One row per applied entry. `id` orders entries across owners in the order they were applied
-- (within one owner it grows with seq: each apply takes its id under the owner's lock).
CREATE TABLE __schema__.ledger_journal (
  id bigint GENERATED ALWAYS AS IDENTITY,
  ledger text COLLATE "C" NOT NULL,
  owner text COLLATE "C" NOT NULL,
  seq bigint NOT NULL,
  signature text COLLATE "C" NOT NULL,
  scope text COLLATE "C",
  ord numeric,
  -- The deltas as JSON text (field -> decimal string), in the entry's own field order.
  deltas text NOT NULL,
  -- JSON text as the client wrote it: `text`, not jsonb, which would reorder keys and refuse
  -- the escape \u0000 inside a string.
  meta text,
  -- Store time: the database's clock, in ms since the epoch.
  at bigint NOT NULL,
  PRIMARY KEY (ledger, owner, seq)
);
-- The journal read across owners (optionally by scope), in the order applied.
CREATE INDEX ledger_journal_by_id ON __schema__.ledger_journal (ledger, id);
CREATE INDEX ledger_journal_by_scope ON __schema__.ledger_journal (ledger, scope, id) WHERE scope IS NOT NULL;

-- Where ledger_cleanup stopped: it walks the owners in key order, a bounded stretch per call.
CREATE TABLE __schema__.ledger_cleanup_cursor (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  ledger text COLLATE "C" NOT NULL,
  owner text COLLATE "C" NOT NULL
);
INSERT INTO __schema__.ledger_cleanup_cursor (id, ledger, owner) VALUES (true, '', '');

-- ledger_apply: one apply (p_resolve false) or one resolve (p_resolve true) of an entry, in one
-- statement. Apply: duplicate when the window holds the signature; stale when its order (with
-- the horizon on) is at or below the horizon; else booked. Resolve: duplicate when the window or
-- the retained journal holds it; booked when absence proves it new (nothing dropped, or an order
-- above every dropped order, or no order when none without one was dropped; with a journal of
-- 0 entries only an owner that booked nothing); else unknown. Booking: the signature enters the
-- window as the newest (the oldest evicted, in order, while over capacity, raising the horizon),
-- balances, the scope share, the journal row (seq + 1) and its retention, the owner row.
--
-- p_keep: journal entries kept per owner; NULL keeps all, 0 none. Retention drops at most
-- TRIM_MAX rows per apply: 1 in the steady state (the row one past the limit); more only after
-- the limit was lowered, caught up a few per apply (and by ledger_cleanup for idle owners).
-- Returns one row: outcome, seq (NULL unless booked), the owner's balances as JSON text.
--
-- Shaped for the server time of one call (measured by a loop of calls inside the server): OUT
-- parameters rather than a set (no tuplestore per call); a first entry of an owner inserts its
-- booked row at once (one write, not an empty row locked and then updated); the balances and the
-- horizon in plpgsql expressions rather than subqueries (each SQL subquery is an executor run);
-- no journal read, trim or scope write unless resolve, retention or a scope asks for it.
CREATE FUNCTION __schema__.ledger_apply(
  p_resolve boolean,
  p_ledger text,
  p_owner text,
  p_signature text,
  p_capacity bigint,
  p_horizon boolean,
  p_scope text,
  p_order numeric,
  p_fields text[],
  p_amounts numeric[],
  p_meta text,
  p_keep bigint,
  OUT outcome text,
  OUT seq text,
  OUT balances text
)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  -- 8 rows: the one row past the limit of the steady state, and 7 of a lowered limit's backlog
  -- (an index range delete of a few rows: microseconds), so a limit lowered from n to m is caught
  -- up after about (n - m) / 7 applies of the owner, with no apply paying for the whole backlog.
  trim_max constant bigint := 8;
  o __schema__.ledger_owner%ROWTYPE;
  v_new boolean;
  v_made boolean;
  v_seq bigint;
  v_balances jsonb;
  v_sigs text[];
  v_orders numeric[];
  v_horizon numeric;
  v_evict bigint;
  v_upto bigint;
  v_dropped_order numeric;
  v_dropped_unordered boolean;
  d_max numeric;
  d_unordered boolean;
  i int;
BEGIN
  -- Two rounds at most: a first entry racing another first entry of its owner finds the row
  -- made when it inserts, and is judged again against it (owner rows are never deleted).
  FOR attempt IN 1..2 LOOP
    SELECT * INTO o FROM __schema__.ledger_owner l WHERE l.ledger = p_ledger AND l.owner = p_owner FOR UPDATE;
    v_new := NOT FOUND;
    IF v_new THEN
      -- No row: an owner that booked nothing (its defaults), so no journal row either.
      o.seq := 0;
      o.balances := '{}';
      o.sigs := '{}';
      o.orders := '{}';
      o.kept_from := 1;
      o.dropped_unordered := false;
    ELSE
      IF p_signature = ANY (o.sigs) THEN
        outcome := 'duplicate';
        balances := o.balances::text;
        RETURN;
      END IF;
      IF p_resolve THEN
        IF EXISTS (
          SELECT 1 FROM __schema__.ledger_journal j
          WHERE j.ledger = p_ledger AND j.owner = p_owner AND j.signature = p_signature
        ) THEN
          outcome := 'duplicate';
          balances := o.balances::text;
          RETURN;
        END IF;
        IF NOT (CASE
          WHEN p_keep = 0 THEN o.seq = 0
          WHEN p_order IS NULL THEN NOT o.dropped_unordered
          ELSE o.dropped_order IS NULL OR p_order > o.dropped_order
        END) THEN
          outcome := 'unknown';
          balances := o.balances::text;
          RETURN;
        END IF;
      ELSIF p_horizon AND p_order IS NOT NULL AND o.horizon IS NOT NULL AND p_order <= o.horizon THEN
        outcome := 'stale';
        balances := o.balances::text;
        RETURN;
      END IF;
    END IF;

    -- Booked. The window: evicting the k oldest at once raises the horizon to the highest of
    -- their orders, exactly as evicting them one at a time would (max ignores NULLs, as
    -- greatest does).
    v_horizon := o.horizon;
    v_evict := cardinality(o.sigs) + 1 - p_capacity;
    IF v_evict > 0 THEN
      FOR i IN 1..v_evict::int LOOP
        v_horizon := greatest(v_horizon, o.orders[i]);
      END LOOP;
      v_sigs := array_append(o.sigs[v_evict::int + 1:], p_signature);
      v_orders := array_append(o.orders[v_evict::int + 1:], CASE WHEN p_horizon THEN p_order END);
    ELSE
      v_sigs := array_append(o.sigs, p_signature);
      v_orders := array_append(o.orders, CASE WHEN p_horizon THEN p_order END);
    END IF;

    -- The fields of one entry are distinct (checkApplyCommand), so adding them one by one is
    -- adding them all at once.
    v_seq := o.seq + 1;
    v_balances := o.balances;
    FOR i IN 1..coalesce(cardinality(p_fields), 0) LOOP
      v_balances := v_balances || jsonb_build_object(
        p_fields[i], (coalesce((v_balances ->> p_fields[i])::numeric, 0) + p_amounts[i])::text);
    END LOOP;

    v_dropped_order := o.dropped_order;
    v_dropped_unordered := o.dropped_unordered;
    IF p_keep = 0 THEN
      -- No journal kept: the entry is dropped as it is booked.
      IF p_order IS NULL THEN
        v_dropped_unordered := true;
      ELSE
        v_dropped_order := greatest(v_dropped_order, p_order);
      END IF;
    END IF;

    v_upto := o.kept_from;
    IF p_keep IS NOT NULL THEN
      v_upto := least(v_seq - p_keep + 1, o.kept_from + trim_max);
      IF v_upto > o.kept_from THEN
        WITH d AS (
          DELETE FROM __schema__.ledger_journal j
          WHERE j.ledger = p_ledger AND j.owner = p_owner AND j.seq >= o.kept_from AND j.seq < v_upto
          RETURNING j.ord
        )
        SELECT max(d.ord), bool_or(d.ord IS NULL) INTO d_max, d_unordered FROM d;
        v_dropped_order := greatest(v_dropped_order, d_max);
        v_dropped_unordered := v_dropped_unordered OR coalesce(d_unordered, false);
      ELSE
        v_upto := o.kept_from;
      END IF;
    END IF;

    -- The owner row and the journal row in one statement (one executor run, not two). A first
    -- entry writes its journal row only if it made the owner row: one that lost the race to make
    -- it has written nothing when it goes round again.
    IF v_new THEN
      WITH made AS (
        INSERT INTO __schema__.ledger_owner AS l
          (ledger, owner, seq, balances, sigs, orders, horizon, kept_from, dropped_order, dropped_unordered)
        VALUES (p_ledger, p_owner, v_seq, v_balances, v_sigs, v_orders, v_horizon, v_upto,
                v_dropped_order, v_dropped_unordered)
        ON CONFLICT DO NOTHING
        RETURNING 1
      ), journal AS (
        INSERT INTO __schema__.ledger_journal (ledger, owner, seq, signature, scope, ord, deltas, meta, at)
        SELECT p_ledger, p_owner, v_seq, p_signature, p_scope, p_order,
          json_object(p_fields, p_amounts::text[])::text, p_meta,
          floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
        FROM made WHERE p_keep IS NULL OR p_keep > 0
      )
      SELECT count(*) > 0 INTO v_made FROM made;
      CONTINUE WHEN NOT v_made;
    ELSE
      WITH journal AS (
        INSERT INTO __schema__.ledger_journal (ledger, owner, seq, signature, scope, ord, deltas, meta, at)
        SELECT p_ledger, p_owner, v_seq, p_signature, p_scope, p_order,
          json_object(p_fields, p_amounts::text[])::text, p_meta,
          floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint
        WHERE p_keep IS NULL OR p_keep > 0
      )
      UPDATE __schema__.ledger_owner l SET
        seq = v_seq,
        balances = v_balances,
        sigs = v_sigs,
        orders = v_orders,
        horizon = v_horizon,
        kept_from = v_upto,
        dropped_order = v_dropped_order,
        dropped_unordered = v_dropped_unordered
      WHERE l.ledger = p_ledger AND l.owner = p_owner;
    END IF;

    IF p_scope IS NOT NULL AND cardinality(p_fields) > 0 THEN
      INSERT INTO __schema__.ledger_scope_share AS s (ledger, scope, owner, field, amount)
      SELECT p_ledger, p_scope, p_owner, f, a FROM unnest(p_fields, p_amounts) AS u(f, a)
      ON CONFLICT (ledger, scope, owner, field) DO UPDATE SET amount = s.amount + EXCLUDED.amount;
    END IF;

    outcome := 'applied';
    seq := v_seq::text;
    balances := v_balances::text;
    RETURN;
  END LOOP;
  RAISE EXCEPTION 'ledger_apply: the owner row of % neither found nor made', p_owner
    USING ERRCODE = 'serialization_failure';
END
$$;

-- An owner's balances as JSON text (field -> decimal string); NULL when it has none.
CREATE FUNCTION __schema__.ledger_balances(p_ledger text, p_owner text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT l.balances::text FROM __schema__.ledger_owner l WHERE l.ledger = p_ledger AND l.owner = p_owner
$$;

-- An owner's window: its signatures as a JSON array (oldest first) and its horizon as text.
CREATE FUNCTION __schema__.ledger_window(p_ledger text, p_owner text)
RETURNS TABLE (sigs text, horizon text)
LANGUAGE sql STABLE AS $$
  SELECT to_json(l.sigs)::text, l.horizon::text
  FROM __schema__.ledger_owner l WHERE l.ledger = p_ledger AND l.owner = p_owner
$$;

-- A scope's totals as JSON text (field -> decimal string): the sum of its owners' shares.
CREATE FUNCTION __schema__.ledger_scope_totals(p_ledger text, p_scope text) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT coalesce(json_object_agg(t.field, t.total::text), '{}')::text
  FROM (
    SELECT s.field, sum(s.amount) AS total FROM __schema__.ledger_scope_share s
    WHERE s.ledger = p_ledger AND s.scope = p_scope GROUP BY s.field
  ) t
$$;

-- Journal entries, oldest first: of one owner in seq order (its primary key), or across owners
-- in the order applied (by id); each filter optional; p_limit NULL: no limit. Three statements
-- rather than one with `p_owner IS NULL OR ...`: each uses the index that answers it.
CREATE FUNCTION __schema__.ledger_journal(
  p_ledger text,
  p_owner text,
  p_scope text,
  p_after bigint,
  p_limit bigint
) RETURNS TABLE (seq text, owner text, signature text, scope text, ord text, deltas text, meta text, at text)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  IF p_owner IS NOT NULL THEN
    RETURN QUERY
      SELECT j.seq::text, j.owner, j.signature, j.scope, j.ord::text, j.deltas, j.meta, j.at::text
      FROM __schema__.ledger_journal j
      WHERE j.ledger = p_ledger AND j.owner = p_owner AND j.seq > coalesce(p_after, 0)
        AND (p_scope IS NULL OR j.scope = p_scope)
      ORDER BY j.seq LIMIT p_limit;
  ELSIF p_scope IS NOT NULL THEN
    RETURN QUERY
      SELECT j.seq::text, j.owner, j.signature, j.scope, j.ord::text, j.deltas, j.meta, j.at::text
      FROM __schema__.ledger_journal j
      WHERE j.ledger = p_ledger AND j.scope = p_scope AND j.seq > coalesce(p_after, 0)
      ORDER BY j.id LIMIT p_limit;
  ELSE
    RETURN QUERY
      SELECT j.seq::text, j.owner, j.signature, j.scope, j.ord::text, j.deltas, j.meta, j.at::text
      FROM __schema__.ledger_journal j
      WHERE j.ledger = p_ledger AND j.seq > coalesce(p_after, 0)
      ORDER BY j.id LIMIT p_limit;
  END IF;
END
$$;

-- Deletes at most p_limit journal rows past the retention (p_keep per owner), walking the owners
-- in key order from where the last call stopped, at most p_scan owners per call (so each call's
-- work is bounded, whatever the number of owners); returns how many rows it deleted. Applies
-- trim their own owner as they book, so this only catches up owners left over a lowered limit
-- that have not applied since. Owners locked by an apply are skipped (that apply trims them).
-- Concurrent calls take turns on the cursor row.
CREATE FUNCTION __schema__.ledger_cleanup(p_keep bigint, p_limit bigint, p_scan bigint) RETURNS bigint
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  c record;
  o record;
  l record;
  v_prev_ledger text;
  v_prev_owner text;
  v_scanned bigint := 0;
  v_deleted bigint := 0;
  v_upto bigint;
  d_count bigint;
  d_max numeric;
  d_unordered boolean;
BEGIN
  SELECT k.ledger, k.owner INTO c FROM __schema__.ledger_cleanup_cursor k WHERE k.id FOR UPDATE;
  v_prev_ledger := c.ledger;
  v_prev_owner := c.owner;
  FOR o IN
    SELECT w.ledger, w.owner, w.seq, w.kept_from FROM __schema__.ledger_owner w
    WHERE (w.ledger, w.owner) > (c.ledger, c.owner)
    ORDER BY w.ledger, w.owner LIMIT p_scan
  LOOP
    v_scanned := v_scanned + 1;
    IF o.seq - o.kept_from + 1 > p_keep THEN
      IF v_deleted >= p_limit THEN
        -- The limit is used up before this owner: the next call starts with it.
        UPDATE __schema__.ledger_cleanup_cursor k SET ledger = v_prev_ledger, owner = v_prev_owner WHERE k.id;
        RETURN v_deleted;
      END IF;
      SELECT w.seq, w.kept_from INTO l FROM __schema__.ledger_owner w
      WHERE w.ledger = o.ledger AND w.owner = o.owner FOR UPDATE SKIP LOCKED;
      IF FOUND THEN
        v_upto := least(l.seq - p_keep + 1, l.kept_from + (p_limit - v_deleted));
        IF v_upto > l.kept_from THEN
          WITH d AS (
            DELETE FROM __schema__.ledger_journal j
            WHERE j.ledger = o.ledger AND j.owner = o.owner AND j.seq >= l.kept_from AND j.seq < v_upto
            RETURNING j.ord
          )
          SELECT count(*), max(d.ord), bool_or(d.ord IS NULL) INTO d_count, d_max, d_unordered FROM d;
          UPDATE __schema__.ledger_owner w SET
            kept_from = v_upto,
            dropped_order = greatest(w.dropped_order, d_max),
            dropped_unordered = w.dropped_unordered OR coalesce(d_unordered, false)
          WHERE w.ledger = o.ledger AND w.owner = o.owner;
          v_deleted := v_deleted + d_count;
          IF v_upto < l.seq - p_keep + 1 THEN
            -- The limit ran out inside this owner: the next call starts with it again.
            UPDATE __schema__.ledger_cleanup_cursor k SET ledger = v_prev_ledger, owner = v_prev_owner WHERE k.id;
            RETURN v_deleted;
          END IF;
        END IF;
      END IF;
    END IF;
    v_prev_ledger := o.ledger;
    v_prev_owner := o.owner;
  END LOOP;
  -- A short stretch reached the last owner: the next call starts from the first again.
  IF v_scanned < p_scan THEN
    v_prev_ledger := '';
    v_prev_owner := '';
  END IF;
  UPDATE __schema__.ledger_cleanup_cursor k SET ledger = v_prev_ledger, owner = v_prev_owner WHERE k.id;
  RETURN v_deleted;
END
$$;
