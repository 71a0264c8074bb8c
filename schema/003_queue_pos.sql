-- Schema version 3: the order of the pending line survives a restart.
--
-- New trials wait in number order, but retried, given-back and promoted
-- trials go to the front of the line, the latest first. rungd rebuilt the
-- line at start from the trials' numbers, so two promoted trials waiting for
-- their worker could resume the other way round after a restart, and every
-- later decision of the scheduler could differ from a run without it.

-- A pending trial's place in its experiment's line: smaller goes first.
-- A new trial's is its number; a trial put back at the front gets one less
-- than the trial then first in line. NULL when not pending; a pending row
-- written before this version reads as its number.
ALTER TABLE trials ADD COLUMN queue_pos INTEGER;
