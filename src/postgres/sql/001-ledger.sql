-- Migration 001: the ledger tables and functions of the Postgres store (to be written).
CREATE TABLE IF NOT EXISTS __schema__.ledger_placeholder (id int);
