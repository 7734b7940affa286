// Package checkpoint keeps the states of an agent's workspace so any step can be seen
// and undone: Checkpoint before a step that may change the workspace, Diff between two
// checkpoints (or a checkpoint and the workspace now), Restore to put the workspace
// back exactly as it was. The agent loop, agentctl, the web console and chat call it;
// it knows nothing of them: its inputs are paths and options, its outputs data.
//
// One Store per workspace lives in a folder the daemon gives it, inside the state
// directory and outside every workspace (<state>/checkpoints/<agent id>/), out of
// the sandbox's sight: the agent can neither read nor change it. The workspace itself
// is hostile: it is opened by commands.OpenWorkspaceDir and everything beneath it one
// name at a time with O_NOFOLLOW, so no symlink is followed, a fifo never blocks, a
// huge file is not read past the budget and a 20,000-deep tree costs no more
// descriptors than a shallow one.
//
// # What a checkpoint holds
//
// Every entry: regular files (content, mode, mtime), folders (empty ones too, with
// their mode), symlinks (their target, wherever it points: it is data, never
// followed), fifos (re-made by a restore), sockets and devices (named, without content;
// a restore leaves those paths alone). Hard links are kept as such: a file's second
// name in the workspace is recorded as a link to its first, and a restore links them
// again; a name whose other names are outside the workspace is kept as a copy.
// Owners are put back where the daemon may (as root), and folders' and symlinks' times.
// Setuid and setgid bits are recorded but not restored. The workspace folder's own
// mode is not recorded. Content past Options' bounds (a file's size, a step's, the
// store's, the count of files and folders), and what cannot be read, is not
// captured: the checkpoint is Partial, its notices name each path and why
// (Info.Problem puts it in one sentence), and a restore leaves those paths as it finds
// them.
//
// # Cost
//
// A checkpoint reads only what changed: a file whose size, mtime, ctime, inode and
// device are those of the latest checkpoint keeps its content hash, as git's index
// does (a file changed within 50 ms of a capture, or 2 s on a filesystem that keeps
// whole seconds, is read again next time, since a change in the same timestamp tick
// would not show). Only new content is stored; folders that did not change keep their
// listing. When nothing changed at all, Checkpoint returns the latest checkpoint and
// writes nothing. It does not even walk the workspace when an inotify watch on each of
// its folders, put there by the walk that took the latest checkpoint, has seen no event
// since (watch.go); a lost event, a watch limit reached or a file with a second name
// outside the watched folders makes it walk.
//
// # On disk
//
//	<dir>/lock                  flock(2)ed by the open Store
//	<dir>/objects/<sha256 hex>  content-addressed objects: file contents as they were,
//	                            and folder listings (trees)
//	<dir>/checkpoints/<id>      one record per checkpoint, id in 20 decimal digits
//	<dir>/restore               the journal of a restore under way
//	<dir>/lent                  the modes a walk lent itself access over, to give back
//	<dir>/tmp/                  files being written; emptied by Open
//
// Numbers are varints (encoding/binary: uvarint, or zig-zag varint where marked), and
// strings and byte strings a uvarint length then the bytes, so names may hold any byte.
//
// A tree object is "agentd-tree 1\n", a uvarint count, then per entry sorted by name:
// name, kind byte (f file, d folder, l symlink, p fifo, s socket, c device, ? not
// examinable), flags byte (1 not captured, 2 racy: stat data not to be trusted next
// time, 4 had several names, 8 inline, 16 meta, 32 stamped, 64 xattrs, 128 tree
// stamp), mode (st_mode & 07777); with meta the owner's uid and gid and the SHA-256
// of the extended attributes as a byte string ("" for none: symlinks, and files not read); with xattrs the
// extended attributes themselves (what that SHA-256 hashes: names sorted, each name and
// value a byte string; kept up to 4 KiB, and put back by a restore); for files size,
// mtime and ctime (ns, varint), inode, device; for stamped folders and symlinks mtime; for captured files and folders the 32-byte
// SHA-256 of the content or of the folder's tree object — or, for a folder whose tree
// object is at most 512 bytes (inline), that tree object itself as a byte string, so a
// chain of small folders costs a few objects, not one each; for symlinks and files the
// target (a symlink's, or for a hard link the path of the file's first name, ""
// otherwise); for entries not captured the reason; with tree stamp the 32-byte stamp of
// all the folder holds (stamp.go).
//
// A record is "agentd-checkpoint 1\n", id, time (ns, varint), the 32-byte root tree
// hash, files, bytes, new bytes, a count then per notice path, problem and a lost byte,
// the count of notices left out, a partial byte, and a byte set when some file has
// several names (a restore then reads every folder to link them again).
//
// The journal is "agentd-restore 1\n", the workspace path, the target checkpoint id
// and the id of the checkpoint taken just before the restore; for an apply
// (RestoreFrom, which writes only the paths that differ from one checkpoint to the
// target) then that checkpoint's id and the count and names left out. PutBack journals
// as an apply: its target is a checkpoint it writes first, the workspace as it is with
// the paths put back grafted in from the earlier checkpoint.
//
// # Durability
//
// Objects are written to tmp/, flushed with one syncfs(2), then renamed into objects/
// and the folder fsynced: an object in place is always whole, so a checkpoint that
// finds an object it needs never writes it again. A record is written to tmp/,
// fsynced, renamed into checkpoints/ and the folder fsynced, after its objects: when
// Checkpoint returns, the checkpoint survives kill -9 and power loss.
//
// A restore checkpoints the workspace first (Restored.Before, so the restore can be
// undone), writes the journal durably, then makes each folder hold what the target
// says: names the target lacks are removed, files are written to a temporary name,
// checked against their hash and renamed into place; then one syncfs, then the journal
// is removed. Each step looks at the workspace as it is, so running it again is
// harmless: after a crash, Recover (or the next call) runs it again to the end.
//
// A daemon that is not root lends itself, as owner, access to what the agent locked by
// its mode (dirs.go lend). Each lend is first appended to <dir>/lent ("agentd-lent 1\n",
// then per lend the workspace path, the path in it, device, inode, the mode it had and
// the mode lent) and synced; the note is removed once every mode is back. Open gives
// each path noted its mode back, if it is still that inode at the mode lent, before it
// finishes a restore.
//
// Retention keeps at most KeepCount checkpoints whose objects together fit in
// MaxStoreBytes, the newest and the held ones (Hold: the daemon holds its agent's latest
// steps' checkpoints, so they stay in rewind range) always; past a bound it drops the
// oldest until a tenth of it is free. It runs after Checkpoint returns, while the step does, and the next call
// waits for it. Collection removes dropped records, fsyncs,
// and only then removes objects no kept record reaches, so a crash mid-way leaves
// garbage for the next collection, never a record without its objects.
package checkpoint
