-- Migration 002: the limiter tables and functions of the Postgres store (to be written).
CREATE TABLE IF NOT EXISTS __schema__.limiter_placeholder (id int);
