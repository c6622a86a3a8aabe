--[[
  stream-attempt: counts one more handler run of a redelivered entry, fenced (a zombie's count is
  not taken): the delivery count also counts deliveries no handler started (entries a killed
  consumer held while they waited their key's turn), so dead letters go by the runs counted here.
  KEYS[1]  stream           KEYS[2] attempts hash (same hash slot on Cluster)
  ARGV[1]  group            ARGV[2] consumer         ARGV[3] entry id       ARGV[4] token
  Returns  the runs counted for the entry, this one included (the first delivery counts as one,
           started or not), or 0 when fenced
]]

-- #include lib/stream-fence.lua

if stream_fenced(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4]) then return 0 end
return redis.call('HINCRBY', KEYS[2], ARGV[3], 1) + 1
