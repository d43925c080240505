-- 0008: runner list hygiene. A runner that was never paired, or was revoked, can be removed from the
-- list; its row stays (events, commands and runs refer to it) with removed_at set, and its pairing
-- codes stop working. A runner created without a name takes the machine's hostname when it pairs.
alter table runners add column removed_at timestamptz;
