-- The Merkle frontier of each checkpoint gavel signs itself: the roots of
-- the perfect subtrees over its first `size` leaves, largest first, 32
-- bytes each. Not part of any hash or signature: it only lets the next
-- automatic checkpoint extend the tree from here instead of reading every
-- row again. A frontier that does not rebuild the checkpoint's signed root
-- is ignored, and a wrong one can only produce a checkpoint that `verify`
-- then refuses.
ALTER TABLE checkpoints ADD COLUMN frontier BLOB;
