package eventbus_test

import (
	"context"
	"testing"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// An archive created through one process of a cluster keeps the events
// put through every process, is listed by every process, and once
// deleted through one is filled by none, its events purged. AWS: an
// archive keeps every event sent to its bus that matches its pattern
// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-archive.html).
// Before, each process knew only the archives it had loaded when it
// opened and those it created itself: an event put through another node
// was not archived (EventCount 1 for one event through each of two
// nodes), ListArchives on the other node answered none, and after a
// DeleteArchive the other node went on archiving under the deleted
// archive's subject.
func TestAnArchiveCreatedThroughOneProcessKeepsEventsPutThroughEvery(t *testing.T) {
	clock := clockwork.NewFakeClockAt(t0)
	a := testenv.Start(t, testenv.Options{Clock: clock, ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: a.Engine.ClientURL()})
	ctx := context.Background()
	arch, err := a.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "all", EventSourceArn: "default", RetentionDays: 3})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the archive known to the second process", func() bool {
		l := b.Events.ListArchives("", "")
		return len(l) == 1 && l[0].ArchiveName == "all" && l[0].RetentionDays == 3
	})
	put(t, b, orderEvent("through-b", 1))
	put(t, a, orderEvent("through-a", 2))
	for _, rn := range []*eventbus.Service{a.Events, b.Events} {
		if d, err := rn.DescribeArchive(ctx, "all"); err != nil || d.EventCount != 2 {
			t.Fatalf("DescribeArchive: %+v %v, want 2 events", d, err)
		}
	}

	if err := a.Events.DeleteArchive(ctx, "all"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the archive forgotten by the second process", func() bool {
		return len(b.Events.ListArchives("", "")) == 0
	})
	put(t, b, orderEvent("after-delete", 3))
	subject := "ebarchive." + arch.ID
	st, err := a.Engine.JS.Stream(ctx, "RUNNEL_EB_ARCHIVE")
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "no event left under the deleted archive's subject", func() bool {
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(subject))
		return err == nil && info.State.Subjects[subject] == 0
	})
	if _, err := b.Events.DescribeArchive(ctx, "all"); err == nil {
		t.Error("DescribeArchive of the deleted archive through the second process answered it")
	}
	// Made again under its name through the second process, it is known
	// to the first, with its new subject, and starts empty.
	if _, err := b.Events.CreateArchive(ctx, eventbus.Archive{ArchiveName: "all", EventSourceArn: "default"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "the new archive known to the first process", func() bool {
		l := a.Events.ListArchives("", "")
		return len(l) == 1 && l[0].RetentionDays == 0
	})
	put(t, a, orderEvent("again", 4))
	if d, err := b.Events.DescribeArchive(ctx, "all"); err != nil || d.EventCount != 1 {
		t.Fatalf("DescribeArchive of the new archive: %+v %v, want 1 event", d, err)
	}
}
