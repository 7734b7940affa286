package fakediscord

import (
	"fmt"
	"net/http"
	"regexp"
	"time"
)

// Threads age as on Discord: a thread with no message for its auto_archive_duration is
// archived. The fake's clock is the wall clock plus what Advance added, so a test can
// let a week pass at once. The rules for a bot without MANAGE_THREADS:
//
//   - sending in an archived thread that is not locked unarchives it (a message is activity);
//   - editing a message in an archived thread fails with 50083 "Thread is archived", and
//     so does any other change but unarchiving it (PATCH /channels/{id} {"archived":false});
//   - a locked thread, archived or not, refuses new messages (160005 "Thread is locked")
//     and its unarchiving (50013 Missing Permissions); an edit there fails with 160005
//     (50083 first when it is archived too); Config.ManageThreads lifts all three;
//   - a thread or channel where the bot may not send (ForbidPosting: a moderator denied it
//     Send Messages in Threads there) refuses its new messages with 50013 Missing
//     Permissions, but not its edits: Discord checks that permission on sending only.

// now is the fake's clock.
func (s *Server) now() time.Time { return time.Now().Add(s.clockSkew) }

// Advance moves the fake's clock forward by d and archives the threads idle for longer
// than their auto_archive_duration (THREAD_UPDATE is dispatched for each). The clock
// also ages interactions: their 3 s deadline and their token's 15 minutes.
func (s *Server) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clockSkew += d
	for id := range s.channels {
		s.expireLocked(id)
	}
}

// ArchiveThread archives a thread at once, as a moderator (or auto-archive) would.
func (s *Server) ArchiveThread(id string) error {
	yes := true
	return s.setThread(id, &yes, nil)
}

// LockThread locks a thread, as a moderator's "Lock Thread" does: it stays open (not
// archived) for reading, and only members with MANAGE_THREADS may write in it. Closing
// it as well is ArchiveThread.
func (s *Server) LockThread(id string) error {
	locked := true
	return s.setThread(id, nil, &locked)
}

// ForbidPosting denies the bot sending messages in a channel or thread, as a moderator
// denying it Send Messages (in Threads) there does: its posts fail with 50013 Missing
// Permissions; its edits of messages already there still go through.
func (s *Server) ForbidPosting(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.channels[id] == nil {
		return fmt.Errorf("fakediscord: no channel %s", id)
	}
	s.noSend[id] = true
	return nil
}

func (s *Server) setThread(id string, archived, locked *bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.channels[id]
	if th == nil || th.ThreadMetadata == nil {
		return fmt.Errorf("fakediscord: %s is not a thread", id)
	}
	if locked != nil {
		th.ThreadMetadata.Locked = *locked
	}
	if archived != nil {
		s.setArchivedLocked(th, *archived)
	} else {
		s.dispatchLocked("THREAD_UPDATE", th, IntentGuilds)
	}
	return nil
}

func (s *Server) setArchivedLocked(th *Channel, archived bool) {
	md := th.ThreadMetadata
	if md.Archived != archived {
		md.Archived, md.ArchiveTimestamp = archived, s.now().UTC()
	}
	if !archived {
		s.activeAt[th.ID] = s.now()
	}
	s.dispatchLocked("THREAD_UPDATE", th, IntentGuilds)
}

// expireLocked archives thread id when it has been idle for its auto_archive_duration.
func (s *Server) expireLocked(id string) {
	th := s.channels[id]
	if th == nil || th.ThreadMetadata == nil || th.ThreadMetadata.Archived {
		return
	}
	idle := time.Duration(th.ThreadMetadata.AutoArchiveDuration) * time.Minute
	if at, ok := s.activeAt[id]; ok && s.now().Sub(at) >= idle {
		s.setArchivedLocked(th, true)
	}
}

// touchLocked records activity in channel id (a message in a thread).
func (s *Server) touchLocked(id string) {
	if th := s.channels[id]; th != nil && th.ThreadMetadata != nil {
		s.activeAt[id] = s.now()
	}
}

// canSendLocked applies the thread rules to a new message in channel id by the bot,
// unarchiving the thread when the message may go in.
func (s *Server) canSendLocked(id string) *restError {
	s.expireLocked(id)
	th := s.channels[id]
	if th == nil || th.ThreadMetadata == nil {
		return nil
	}
	if th.ThreadMetadata.Locked && !s.cfg.ManageThreads {
		return errBadRequest(CodeThreadLocked, "Thread is locked")
	}
	if th.ThreadMetadata.Archived {
		s.setArchivedLocked(th, false)
	}
	return nil
}

// canEditLocked applies the thread rules to an edit of a message in channel id.
func (s *Server) canEditLocked(id string) *restError {
	s.expireLocked(id)
	th := s.channels[id]
	switch {
	case th == nil || th.ThreadMetadata == nil:
		return nil
	case th.ThreadMetadata.Archived:
		return errBadRequest(CodeThreadArchived, "Thread is archived")
	case th.ThreadMetadata.Locked && !s.cfg.ManageThreads:
		return errBadRequest(CodeThreadLocked, "Thread is locked")
	}
	return nil
}

// canPostLocked applies the bot's permission to send in channel id to a new message
// (interaction responses are the application's, not under it).
func (s *Server) canPostLocked(id string) *restError {
	if s.noSend[id] {
		return &restError{http.StatusForbidden, apiError{Message: "Missing Permissions", Code: CodeMissingPermissions}}
	}
	return s.canSendLocked(id)
}

// modifyChannel is PATCH /channels/{id}, for threads: archived, locked, name and
// auto_archive_duration.
func (s *Server) modifyChannel(q *request, f fields) (int, any, *restError) {
	fe := formErrors{}
	var archived, locked *bool
	var name *string
	var dur *int
	f.get("archived", &archived, fe)
	f.get("locked", &locked, fe)
	f.get("name", &name, fe)
	f.get("auto_archive_duration", &dur, fe)
	if dur != nil && !archiveDurations[*dur] {
		fe.add("auto_archive_duration", "BASE_TYPE_CHOICES", "Value must be one of (60, 1440, 4320, 10080).")
	}
	if err := fe.err(); err != nil {
		return 0, nil, err
	}
	th, rerr := s.channelLocked(q.params[0])
	if rerr != nil {
		return 0, nil, rerr
	}
	if th.ThreadMetadata == nil {
		return 0, nil, &restError{http.StatusForbidden, apiError{Message: "Missing Permissions", Code: CodeMissingPermissions}}
	}
	s.expireLocked(th.ID)
	md := th.ThreadMetadata
	if (md.Locked || locked != nil) && !s.cfg.ManageThreads {
		return 0, nil, &restError{http.StatusForbidden, apiError{Message: "Missing Permissions", Code: CodeMissingPermissions}}
	}
	unarchiving := archived != nil && !*archived
	if md.Archived && !unarchiving {
		return 0, nil, errBadRequest(CodeThreadArchived, "Thread is archived")
	}
	if name != nil {
		th.Name = *name
	}
	if dur != nil {
		md.AutoArchiveDuration = *dur
	}
	if locked != nil {
		md.Locked = *locked
	}
	if archived != nil {
		s.setArchivedLocked(th, *archived)
	} else {
		s.dispatchLocked("THREAD_UPDATE", th, IntentGuilds)
	}
	return http.StatusOK, th, nil
}

// urlRE finds links Discord would unfurl; one wrapped in <…> is not unfurled.
var urlRE = regexp.MustCompile(`https?://[^\s<>]+`)

// recordPreviews notes the links in m a real client would fetch and show as embeds.
func recordPreviews(m *Message) {
	if m.Flags&FlagSuppressEmbeds != 0 {
		return
	}
	for _, loc := range urlRE.FindAllStringIndex(m.Content, -1) {
		if loc[0] > 0 && m.Content[loc[0]-1] == '<' {
			continue
		}
		m.Previewed = append(m.Previewed, m.Content[loc[0]:loc[1]])
	}
}
