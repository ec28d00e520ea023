// The AWS SDK for JavaScript v3's Kinesis client against runnel: put, get
// and reshard. Run by js_test.go with RUNNEL_ENDPOINT set to a runnel's
// AWS endpoint (or by hand: `node kinesis.mjs http://127.0.0.1:4566`).
// It exits non-zero, with the reason on stderr, when runnel answers
// anything but what Kinesis answers.
import {
  KinesisClient,
  CreateStreamCommand,
  DescribeStreamSummaryCommand,
  PutRecordsCommand,
  ListShardsCommand,
  GetShardIteratorCommand,
  GetRecordsCommand,
  SplitShardCommand,
  DeleteStreamCommand,
} from "@aws-sdk/client-kinesis";

const endpoint = process.env.RUNNEL_ENDPOINT || process.argv[2] || "http://127.0.0.1:4566";
const kc = new KinesisClient({
  endpoint,
  region: "us-east-1",
  credentials: { accessKeyId: "test", secretAccessKey: "test" },
});
const StreamName = `js-kinesis-${process.pid}`;
const enc = new TextEncoder();
const dec = new TextDecoder();
const HALF = (1n << 127n).toString(); // the split point of the 128-bit hash key range

function check(cond, what, got) {
  if (!cond) {
    throw new Error(`${what}: got ${JSON.stringify(got, (k, v) => (v instanceof Uint8Array ? dec.decode(v) : v))}`);
  }
}

async function waitActive() {
  for (let i = 0; i < 100; i++) {
    const s = await kc.send(new DescribeStreamSummaryCommand({ StreamName }));
    if (s.StreamDescriptionSummary.StreamStatus === "ACTIVE") return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`stream ${StreamName} never became ACTIVE`);
}

// put writes records whose data are names, each with an explicit hash key
// when given, and returns the shard each went to.
async function put(names, hashKey) {
  const out = await kc.send(new PutRecordsCommand({
    StreamName,
    Records: names.map((n) => ({ Data: enc.encode(n), PartitionKey: "k", ExplicitHashKey: hashKey })),
  }));
  check(out.FailedRecordCount === 0 && out.Records.length === names.length, "PutRecords", out);
  return out.Records.map((r) => r.ShardId);
}

// readShard reads a shard from TRIM_HORIZON: its records' data in order,
// with increasing sequence numbers, until want records were read (an open
// shard) or its end (a closed shard: ChildShards and no NextShardIterator).
async function readShard(ShardId, want, closed) {
  let it = (await kc.send(new GetShardIteratorCommand({ StreamName, ShardId, ShardIteratorType: "TRIM_HORIZON" }))).ShardIterator;
  const data = [];
  let last = -1n;
  for (let i = 0; i < 200 && it; i++) {
    const out = await kc.send(new GetRecordsCommand({ ShardIterator: it, Limit: 4 }));
    for (const r of out.Records) {
      const seq = BigInt(r.SequenceNumber);
      check(seq > last, `${ShardId}: sequence numbers increase`, [last.toString(), r.SequenceNumber]);
      last = seq;
      data.push(dec.decode(r.Data));
    }
    if (!closed && data.length >= want) return { data };
    if (closed && !out.NextShardIterator) return { data, children: out.ChildShards };
    check(!out.ChildShards || out.ChildShards.length === 0 || !out.NextShardIterator, `${ShardId}: ChildShards only at the end`, out);
    it = out.NextShardIterator;
  }
  throw new Error(`${ShardId}: read ${JSON.stringify(data)}, never reached ${closed ? "the closed shard's end" : want + " records"}`);
}

const range = (p, n) => Array.from({ length: n }, (_, i) => `${p}${i}`);

await kc.send(new CreateStreamCommand({ StreamName, ShardCount: 1 }));
try {
  await waitActive();

  // Put, then get in order.
  const first = range("r", 10);
  const shards = await put(first);
  const parent = shards[0];
  check(shards.every((s) => s === parent), "PutRecords: one shard", shards);
  const got = await readShard(parent, first.length, false);
  check(JSON.stringify(got.data) === JSON.stringify(first), "GetRecords: the records in order", got.data);

  // Split the shard at the middle of the hash key range.
  await kc.send(new SplitShardCommand({ StreamName, ShardToSplit: parent, NewStartingHashKey: HALF }));
  await waitActive();
  const list = (await kc.send(new ListShardsCommand({ StreamName }))).Shards;
  check(list.length === 3, "ListShards after SplitShard: 3 shards", list);
  const closed = list.find((s) => s.ShardId === parent);
  check(closed && closed.SequenceNumberRange.EndingSequenceNumber, "the parent is closed (EndingSequenceNumber)", closed);
  const kids = list.filter((s) => s.ShardId !== parent);
  check(kids.every((s) => s.ParentShardId === parent), "the children's ParentShardId", kids);
  const low = kids.find((s) => s.HashKeyRange.StartingHashKey === "0");
  const high = kids.find((s) => s.HashKeyRange.StartingHashKey === HALF);
  check(low && high && BigInt(low.HashKeyRange.EndingHashKey) === (1n << 127n) - 1n &&
    BigInt(high.HashKeyRange.EndingHashKey) === (1n << 128n) - 1n, "the children's hash key ranges", kids);

  // Puts go to the children only; a hash key at the split goes to the
  // upper child.
  const a = range("a", 5), b = range("b", 5);
  const toLow = await put(a, "0"), toHigh = await put(b, HALF);
  check(toLow.every((s) => s === low.ShardId) && toHigh.every((s) => s === high.ShardId), "PutRecords after the split routes to the children", [toLow, toHigh]);

  // The closed parent: its records, then ChildShards and no iterator.
  const end = await readShard(parent, first.length, true);
  check(JSON.stringify(end.data) === JSON.stringify(first), "the closed parent's records", end.data);
  const childIds = (end.children || []).map((c) => c.ShardId).sort();
  check(JSON.stringify(childIds) === JSON.stringify([low.ShardId, high.ShardId].sort()) &&
    end.children.every((c) => c.ParentShards.includes(parent) && c.HashKeyRange), "ChildShards at the parent's end", end.children);

  // The children: their records, in order.
  const lowData = (await readShard(low.ShardId, a.length, false)).data;
  const highData = (await readShard(high.ShardId, b.length, false)).data;
  check(JSON.stringify(lowData) === JSON.stringify(a), "the lower child's records", lowData);
  check(JSON.stringify(highData) === JSON.stringify(b), "the upper child's records", highData);
  console.log(JSON.stringify({ ok: true, parent, children: childIds, records: first.length + a.length + b.length }));
} finally {
  await kc.send(new DeleteStreamCommand({ StreamName, EnforceConsumerDeletion: true }));
}
