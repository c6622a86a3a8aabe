-- Migration 004: the idempotency tables and functions of the Postgres store (to be written).
CREATE TABLE IF NOT EXISTS __schema__.idempotency_placeholder (id int);
