-- chj benchmark database (SQLite).  scripts/bench and chj-benchdb create it
-- from this file; every statement is idempotent.
--
-- One row in runs per benchmark run (one VM boot of bench/vm/bench.sh or
-- bench-resolve.sh); results keeps each job's raw output whole (the full fio
-- JSON, or /usr/bin/time's report for the resolver); metrics holds the
-- numbers extracted or measured, one per (run, target, job, repetition,
-- metric).  "target" is the device under test (linear, chj, chj64, era,
-- era64) or, for resolver runs, the method (find-stat, fiemap, chj-resolve).
PRAGMA foreign_keys = ON;

CREATE TABLE IF NOT EXISTS runs (
	id         INTEGER PRIMARY KEY,
	git_commit TEXT NOT NULL,	-- full hash; "-dirty" when the tree had changes
	kernel     TEXT NOT NULL,	-- uname -r of the guest that ran the jobs
	date       TEXT NOT NULL,	-- start, ISO 8601 UTC
	host       TEXT NOT NULL,	-- host name, CPU model, cores, load at start
	kind       TEXT NOT NULL,	-- 'target' (fio on dm targets) or 'resolve'
	backing    TEXT,		-- brd, virtio, ...
	params     TEXT,		-- the run's parameters, "key=value ..."
	label      TEXT			-- free notes
);

CREATE TABLE IF NOT EXISTS results (
	id      INTEGER PRIMARY KEY,
	run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	seq     INTEGER NOT NULL,	-- execution order within the run
	target  TEXT NOT NULL,
	job     TEXT NOT NULL,
	rep     INTEGER NOT NULL,	-- repetition, from 1
	format  TEXT NOT NULL,		-- 'fio-json' or 'text'
	output  TEXT NOT NULL,		-- the whole output
	UNIQUE (run_id, target, job, rep)
);

CREATE TABLE IF NOT EXISTS metrics (
	run_id  INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	target  TEXT NOT NULL,
	job     TEXT NOT NULL,
	rep     INTEGER NOT NULL,
	metric  TEXT NOT NULL,
	value   REAL NOT NULL,
	PRIMARY KEY (run_id, target, job, rep, metric)
);
CREATE INDEX IF NOT EXISTS metrics_by_metric ON metrics (run_id, job, metric);

-- What a metric means, which direction is better, and whether `compare`
-- gates on it by default (gate = 1).  Metrics missing here are shown but
-- never gate.  Bandwidth of a fixed-block-size job is IOPS times the block
-- size, so only IOPS gates.
CREATE TABLE IF NOT EXISTS metric_info (
	metric      TEXT PRIMARY KEY,
	unit        TEXT NOT NULL,
	better      TEXT NOT NULL CHECK (better IN ('higher', 'lower', 'none')),
	gate        INTEGER NOT NULL,
	description TEXT NOT NULL
);
INSERT OR REPLACE INTO metric_info VALUES
 ('write_iops',        'IO/s',  'higher', 1, 'fio write IOPS'),
 ('read_iops',         'IO/s',  'higher', 1, 'fio read IOPS'),
 ('write_bw_mibs',     'MiB/s', 'higher', 0, 'fio write bandwidth'),
 ('read_bw_mibs',      'MiB/s', 'higher', 0, 'fio read bandwidth'),
 ('write_clat_mean_us','us',    'lower',  0, 'write completion latency, mean'),
 ('write_clat_p50_us', 'us',    'lower',  0, 'write completion latency, median'),
 ('write_clat_p99_us', 'us',    'lower',  1, 'write completion latency, 99th percentile'),
 ('write_clat_p999_us','us',    'lower',  0, 'write completion latency, 99.9th percentile'),
 ('read_clat_mean_us', 'us',    'lower',  0, 'read completion latency, mean'),
 ('read_clat_p50_us',  'us',    'lower',  0, 'read completion latency, median'),
 ('read_clat_p99_us',  'us',    'lower',  1, 'read completion latency, 99th percentile'),
 ('read_clat_p999_us', 'us',    'lower',  0, 'read completion latency, 99.9th percentile'),
 ('write_io_mib',      'MiB',   'none',   0, 'data written by the job'),
 ('read_io_mib',       'MiB',   'none',   0, 'data read by the job'),
 ('cpu_usr_pct',       '%',     'lower',  0, 'fio user CPU'),
 ('cpu_sys_pct',       '%',     'lower',  0, 'fio system CPU (includes the target''s submission path)'),
 ('meta_bytes',        'B',     'none',   0, 'bytes written to the metadata device during the job (its /sys/block stat)'),
 ('meta_bytes_per_gib','B/GiB', 'lower',  1, 'metadata bytes written per GiB of data written'),
 ('chj_commits',       '',      'none',   0, 'dm-chj group commits during the job (stats message)'),
 ('chj_deferred_bios', '',      'none',   0, 'dm-chj first-touch bios held for a commit during the job'),
 ('chj_meta_blocks',   '4KiB',  'none',   0, 'dm-chj bitmap+journal+superblock blocks written during the job'),
 ('ckpt_count',        '',      'none',   0, 'checkpoints taken under load'),
 ('ckpt_lat_mean_ms',  'ms',    'lower',  0, 'checkpoint message latency under load, mean'),
 ('ckpt_lat_p50_ms',   'ms',    'lower',  1, 'checkpoint message latency under load, median'),
 ('ckpt_lat_max_ms',   'ms',    'lower',  0, 'checkpoint message latency under load, maximum'),
 ('chj_sb_writes',     '',      'lower',  0, 'dm-chj superblock writes during the job, each FUA (chunk marks, retires, checkpoints; stats message)'),
 ('chj_sb_writes_per_kwrite', '', 'lower', 0, 'dm-chj superblock (FUA) writes per 1000 writes to the dm device'),
 ('chj_chunk_marks',   '',      'none',   0, 'dm-chj chunks newly marked in the intent map during the job'),
 ('chj_chunk_retires', '',      'none',   0, 'dm-chj chunk marks retired during the job'),
 ('dm_ios',            '',      'none',   0, 'reads + writes completed on the dm device under test during the job (its /sys/block stat)'),
 ('cpu_busy_ms',       'ms',    'lower',  0, 'guest CPU time busy during the job, all CPUs (/proc/stat: not idle, not iowait)'),
 ('cpu_us_per_io',     'us',    'lower',  0, 'guest CPU time busy per I/O of the job (cpu_busy_ms / dm_ios): fio, the target, its workers, the backing'),
 ('meta_fua',          '',      'lower',  0, 'FUA bios queued on the metadata device (block_bio_queue; --trace runs, virtio backing only)'),
 ('meta_flush',        '',      'lower',  0, 'PREFLUSH bios queued on the metadata device (--trace runs only)'),
 ('origin_fua',        '',      'lower',  0, 'FUA bios queued on the origin device by the target (--trace runs only)'),
 ('origin_flush',      '',      'lower',  0, 'PREFLUSH bios queued on the origin device by the target (--trace runs only)'),
 ('fua_per_kwrite',    '',      'lower',  0, 'FUA bios (metadata + origin) per 1000 writes to the dm device (--trace runs only)'),
 ('flush_per_kwrite',  '',      'lower',  0, 'PREFLUSH bios (metadata + origin) per 1000 writes to the dm device (--trace runs only)'),
 ('msg_lat_ms',        'ms',    'none',   0, 'round trip of a no-op dmsetup message (the floor under ckpt_lat)'),
 ('wall_s',            's',     'lower',  1, 'resolver: elapsed time'),
 ('max_rss_kib',       'KiB',   'lower',  1, 'resolver: peak resident memory'),
 ('files_listed',      '',      'none',   0, 'resolver: files reported'),
 ('files_changed',     '',      'none',   0, 'resolver: files actually changed');
