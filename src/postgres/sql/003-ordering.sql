-- Migration 003: the ordering tables and functions of the Postgres store (to be written).
CREATE TABLE IF NOT EXISTS __schema__.ordering_placeholder (id int);
