package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runnel-dev/runnel/internal/sdkhttp"
)

// TestSIGKILLDuringTableWritesLosesNoAcknowledgedWrite: `runnel serve`
// (the tables on the index store, its default) takes puts, updates and
// deletes of a table with a global and a local secondary index from four
// writers through the AWS endpoint, and is killed with SIGKILL among
// them. Started again on the same data directory:
//   - every item is what its last acknowledged write made it, or what the
//     write in flight at the kill would have (each writer owns its keys
//     and writes them one at a time, so no third state is right);
//   - DescribeTable's ItemCount (the index store's count) is the number
//     of items a Scan returns;
//   - each index holds exactly the entries the table's items call for.
func TestSIGKILLDuringTableWritesLosesNoAcknowledgedWrite(t *testing.T) {
	bin := runnelBinary(t)
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	addr := freeAddr(t)
	start := func() *exec.Cmd {
		return startServe(t, bin, []string{"--data-dir", data, "serve", "--aws", addr}, nil)
	}
	client := dynamodb.NewFromConfig(aws.Config{
		HTTPClient:       sdkhttp.Client(),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint:     aws.String("http://" + addr),
		RetryMaxAttempts: 1, // a write's outcome is the one answer it got
	})
	ctx := context.Background()

	first := start()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	n := func(v int) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	_, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String("killed"),
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
			{AttributeName: aws.String("city"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("t"), AttributeType: types.ScalarAttributeTypeN},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byCity"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("city"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{
			IndexName: aws.String("byTime"),
			KeySchema: []types.KeySchemaElement{
				{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
				{AttributeName: aws.String("t"), KeyType: types.KeyTypeRange},
			},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
		}},
	})
	if err != nil {
		first.Process.Kill()
		t.Fatal(err)
	}

	// state is an item as a writer last made it: "" deleted, else
	// "city/t/v" (city "" and t -1: the attribute is absent).
	type keyState struct{ acked, pending string }
	var writer func(w, round int)
	var mu sync.Mutex
	states := map[string]*keyState{}
	acked := 0
	var wg sync.WaitGroup
	round := 0
	writers := func() {
		round++
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				writer(w, round)
			}()
		}
	}
	writer = func(w, round int) {
		rng := rand.New(rand.NewPCG(uint64(w), uint64(round)))
		for i := round * 1000000; ; i++ {
			pk, sk := fmt.Sprintf("w%dp%d", w, rng.IntN(5)), rng.IntN(10)
			id := fmt.Sprintf("%s/%d", pk, sk)
			key := map[string]types.AttributeValue{"pk": s(pk), "sk": n(sk)}
			var next string
			var err error
			mu.Lock()
			st := states[id]
			if st == nil {
				st = &keyState{}
				states[id] = st
			}
			mu.Unlock()
			switch op := rng.IntN(4); op {
			case 0:
				next = ""
				mu.Lock()
				st.pending = next
				mu.Unlock()
				_, err = client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("killed"), Key: key})
			default:
				city, tm := fmt.Sprint("c", rng.IntN(3)), rng.IntN(100)
				if op == 1 {
					city = "" // no city: not in byCity
				}
				if op == 2 {
					tm = -1 // no t: not in byTime
				}
				next = fmt.Sprintf("%s/%d/%d", city, tm, i)
				item := map[string]types.AttributeValue{"pk": s(pk), "sk": n(sk), "v": n(i)}
				if city != "" {
					item["city"] = s(city)
				}
				if tm >= 0 {
					item["t"] = n(tm)
				}
				mu.Lock()
				st.pending = next
				mu.Unlock()
				_, err = client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("killed"), Item: item})
			}
			if err != nil {
				return // the kill: st.pending may or may not have landed
			}
			mu.Lock()
			st.acked = next
			acked++
			mu.Unlock()
		}
	}
	// stopAt signals serve once n writes are acknowledged in all, and
	// waits for the writers to stop (their next write fails).
	stopAt := func(serve *exec.Cmd, n int, sig syscall.Signal) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			mu.Lock()
			a := acked
			mu.Unlock()
			if a >= n {
				break
			}
			if time.Now().After(deadline) {
				serve.Process.Kill()
				t.Fatalf("only %d writes acknowledged in 60 s", a)
			}
			time.Sleep(5 * time.Millisecond)
		}
		serve.Process.Signal(sig)
		serve.Wait()
		wg.Wait()
	}
	// A clean stop first, so that the index store holds a header (the
	// positions it covers) and the kill comes after it: the next open
	// replays the log after the header over a store that may be ahead.
	writers()
	stopAt(first, 300, syscall.SIGTERM)
	again := start()
	writers()
	stopAt(again, 700, syscall.SIGKILL)

	second := start()
	defer func() { second.Process.Signal(syscall.SIGTERM); second.Wait() }()

	// The table's items.
	items := map[string]string{}
	var start0 map[string]types.AttributeValue
	for {
		out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("killed"), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start0})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			id := fmt.Sprintf("%s/%s", it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberN).Value)
			city, tm := "", "-1"
			if c, ok := it["city"]; ok {
				city = c.(*types.AttributeValueMemberS).Value
			}
			if v, ok := it["t"]; ok {
				tm = v.(*types.AttributeValueMemberN).Value
			}
			items[id] = fmt.Sprintf("%s/%s/%s", city, tm, it["v"].(*types.AttributeValueMemberN).Value)
		}
		if start0 = out.LastEvaluatedKey; start0 == nil {
			break
		}
	}
	landedPending := 0
	for id, st := range states {
		got := items[id]
		switch got {
		case st.acked:
		case st.pending:
			landedPending++
		default:
			t.Errorf("%s is %q after the restart; its last acknowledged write made it %q (the write in flight, %q)", id, got, st.acked, st.pending)
		}
	}
	for id := range items {
		if states[id] == nil {
			t.Errorf("%s exists after the restart, never written", id)
		}
	}
	t.Logf("%d writes acknowledged before the kill; %d keys; %d items after the restart; %d writes in flight at the kill landed", acked, len(states), len(items), landedPending)

	d, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("killed")})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToInt64(d.Table.ItemCount); got != int64(len(items)) {
		t.Errorf("ItemCount %d after the restart, a Scan returns %d items", got, len(items))
	}

	// Each index: exactly the entries the items call for (a global index
	// is eventually consistent: asked again for a while).
	wantIndex := func(index string) map[string]bool {
		want := map[string]bool{}
		for id, v := range items {
			f := strings.Split(v, "/")
			if index == "byCity" && f[0] != "" {
				want[id+"@"+f[0]] = true
			}
			if index == "byTime" && f[1] != "-1" {
				want[id+"@"+f[1]] = true
			}
		}
		return want
	}
	readIndex := func(index, attr string) (map[string]bool, error) {
		got := map[string]bool{}
		var from map[string]types.AttributeValue
		for {
			out, err := client.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("killed"), IndexName: aws.String(index), ExclusiveStartKey: from})
			if err != nil {
				return nil, err
			}
			for _, it := range out.Items {
				var v string
				switch a := it[attr].(type) {
				case *types.AttributeValueMemberS:
					v = a.Value
				case *types.AttributeValueMemberN:
					v = a.Value
				}
				got[fmt.Sprintf("%s/%s@%s", it["pk"].(*types.AttributeValueMemberS).Value, it["sk"].(*types.AttributeValueMemberN).Value, v)] = true
			}
			if from = out.LastEvaluatedKey; from == nil {
				return got, nil
			}
		}
	}
	for _, ix := range [][2]string{{"byCity", "city"}, {"byTime", "t"}} {
		want := wantIndex(ix[0])
		if len(want) == 0 {
			t.Fatalf("%s: no entries expected: the test wrote too little", ix[0])
		}
		var got map[string]bool
		var err error
		for range 100 {
			if got, err = readIndex(ix[0], ix[1]); err == nil && mapsEqual(got, want) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("%s: %v", ix[0], err)
		}
		if !mapsEqual(got, want) {
			t.Errorf("%s holds %d entries, the items call for %d (first difference: %s)", ix[0], len(got), len(want), firstDiff(got, want))
		}
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func firstDiff(got, want map[string]bool) string {
	for k := range want {
		if !got[k] {
			return "missing " + k
		}
	}
	for k := range got {
		if !want[k] {
			return "extra " + k
		}
	}
	return "none"
}
