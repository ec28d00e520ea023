#!/usr/bin/env bash
# Smoke test of runnel's AWS endpoint with the AWS CLI: the Kinesis, SQS,
# DynamoDB, DynamoDB Streams, SNS, EventBridge and Scheduler operations that
# awsapi's Go tests drive with aws-sdk-go-v2.
#
#   scripts/aws-cli-smoke.sh                 # builds runnel, serves on a free port
#   ENDPOINT=http://127.0.0.1:4566 scripts/aws-cli-smoke.sh   # an already running serve
#
# When the aws CLI is not installed it exits 0 without doing anything on a
# developer's machine, and fails in CI (CI set): .ci/run installs the CLI,
# so a missing one there is a failed install, not a reason to skip.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v aws >/dev/null 2>&1; then
  case "${CI:-}" in
    ""|false|0) echo "aws CLI not found; skipping"; exit 0 ;;
    *) echo "aws CLI not found and CI is set: the install failed" >&2; exit 1 ;;
  esac
fi
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1 AWS_PAGER=""
unset AWS_PROFILE AWS_SESSION_TOKEN

tmp=$(mktemp -d)
pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

if [ -z "${ENDPOINT:-}" ]; then
  go build -o "$tmp/runnel" ./cmd/runnel
  "$tmp/runnel" --data-dir "$tmp/data" serve --aws 127.0.0.1:0 --status-every 0 >"$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 100); do
    ENDPOINT=$(grep -o 'endpoint-url http://[0-9.:]*' "$tmp/serve.log" | cut -d' ' -f2 || true)
    [ -n "$ENDPOINT" ] && break
    sleep 0.1
  done
  [ -n "$ENDPOINT" ] || { cat "$tmp/serve.log"; echo "serve did not start"; exit 1; }
fi
echo "endpoint $ENDPOINT ($(aws --version 2>&1))"

# Blob arguments: CLI v1 sends the raw text, v2 wants base64 unless told.
bin=()
case "$(aws --version 2>&1)" in aws-cli/1.*) ;; *) bin=(--cli-binary-format raw-in-base64-out) ;; esac

k() { aws --endpoint-url "$ENDPOINT" kinesis "$@"; }
q() { aws --endpoint-url "$ENDPOINT" sqs "$@"; }
check() { # check <what> <expected substring> <actual>
  if [[ "$3" != *"$2"* ]]; then echo "FAIL $1: want $2 in: $3"; exit 1; fi
  echo "ok   $1"
}

# Kinesis.
k create-stream --stream-name smoke --shard-count 2
check describe-stream '"StreamStatus": "ACTIVE"' "$(k describe-stream --stream-name smoke)"
check describe-stream-summary '"OpenShardCount": 2' "$(k describe-stream-summary --stream-name smoke)"
check list-streams '"smoke"' "$(k list-streams)"
check list-shards 'shardId-000000000001' "$(k list-shards --stream-name smoke)"
check put-record '"SequenceNumber"' "$(k put-record --stream-name smoke --partition-key a --data hello "${bin[@]}")"
check put-records '"FailedRecordCount": 0' "$(k put-records --stream-name smoke --records Data=world,PartitionKey=a "${bin[@]}")"
shard=$(k put-record --stream-name smoke --partition-key a --data x "${bin[@]}" --query ShardId --output text)
it=$(k get-shard-iterator --stream-name smoke --shard-id "$shard" --shard-iterator-type TRIM_HORIZON --query ShardIterator --output text)
check get-records '"Data": "aGVsbG8="' "$(k get-records --shard-iterator "$it")"
k increase-stream-retention-period --stream-name smoke --retention-period-hours 48
check increase-retention '"RetentionPeriodHours": 48' "$(k describe-stream-summary --stream-name smoke)"
k decrease-stream-retention-period --stream-name smoke --retention-period-hours 24
check missing-stream 'ResourceNotFoundException' "$(k describe-stream --stream-name nope 2>&1 || true)"
k delete-stream --stream-name smoke

# SQS.
url=$(q create-queue --queue-name smoke --query QueueUrl --output text)
dlq=$(q create-queue --queue-name smoke-dlq --query QueueUrl --output text)
check get-queue-url "$url" "$(q get-queue-url --queue-name smoke)"
check list-queues "$dlq" "$(q list-queues)"
dlq_arn=$(q get-queue-attributes --queue-url "$dlq" --attribute-names QueueArn --query Attributes.QueueArn --output text)
arn=$(q get-queue-attributes --queue-url "$url" --attribute-names QueueArn --query Attributes.QueueArn --output text)
q set-queue-attributes --queue-url "$url" --attributes "{\"VisibilityTimeout\":\"60\",\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"$dlq_arn\\\",\\\"maxReceiveCount\\\":5}\"}"
check get-queue-attributes '"VisibilityTimeout": "60"' "$(q get-queue-attributes --queue-url "$url" --attribute-names All)"
check send-message '"MD5OfMessageBody"' "$(q send-message --queue-url "$url" --message-body hello --message-attributes '{"k":{"DataType":"String","StringValue":"v"}}')"
check send-message-batch '"Successful"' "$(q send-message-batch --queue-url "$url" --entries Id=a,MessageBody=one Id=b,MessageBody=two)"
handle=$(q receive-message --queue-url "$url" --message-attribute-names All --query 'Messages[0].ReceiptHandle' --output text)
q change-message-visibility --queue-url "$url" --receipt-handle "$handle" --visibility-timeout 0
handles=$(q receive-message --queue-url "$url" --max-number-of-messages 10 --query 'Messages[].ReceiptHandle' --output text)
set -- $handles
check change-message-visibility-batch '"Successful"' "$(q change-message-visibility-batch --queue-url "$url" --entries Id=x,ReceiptHandle="$1",VisibilityTimeout=0)"
q delete-message --queue-url "$url" --receipt-handle "$1"
check delete-message-batch '"Successful"' "$(q delete-message-batch --queue-url "$url" --entries Id=y,ReceiptHandle="$2")"
q purge-queue --queue-url "$url"
q send-message --queue-url "$dlq" --message-body dead >/dev/null
task=$(q start-message-move-task --source-arn "$dlq_arn" --destination-arn "$arn" --query TaskHandle --output text)
[ -n "$task" ] && [ "$task" != None ] || { echo "FAIL start-message-move-task: no handle"; exit 1; }; echo "ok   start-message-move-task"
check list-message-move-tasks '"SourceArn"' "$(q list-message-move-tasks --source-arn "$dlq_arn")"
check cancel-message-move-task 'ResourceNotFound' "$(q cancel-message-move-task --task-handle nope 2>&1 || true)"
check missing-queue 'NonExistentQueue' "$(q get-queue-url --queue-name nope 2>&1 || true)"
q delete-queue --queue-url "$url"
q delete-queue --queue-url "$dlq"

# DynamoDB and DynamoDB Streams.
d() { aws --endpoint-url "$ENDPOINT" dynamodb "$@"; }
ds() { aws --endpoint-url "$ENDPOINT" dynamodbstreams "$@"; }
d create-table --table-name smoke --billing-mode PAY_PER_REQUEST \
  --attribute-definitions AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=N \
  --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
  --stream-specification StreamEnabled=true,StreamViewType=NEW_AND_OLD_IMAGES >/dev/null
d wait table-exists --table-name smoke
check describe-table '"TableStatus": "ACTIVE"' "$(d describe-table --table-name smoke)"
check list-tables '"smoke"' "$(d list-tables)"
d put-item --table-name smoke --item '{"pk":{"S":"a"},"sk":{"N":"1"},"v":{"S":"one"}}'
d put-item --table-name smoke --item '{"pk":{"S":"a"},"sk":{"N":"2"},"v":{"S":"two"}}'
check get-item '"one"' "$(d get-item --table-name smoke --key '{"pk":{"S":"a"},"sk":{"N":"1"}}')"
check conditional-put 'ConditionalCheckFailedException' "$(d put-item --table-name smoke --item '{"pk":{"S":"a"},"sk":{"N":"1"}}' --condition-expression 'attribute_not_exists(pk)' 2>&1 || true)"
check update-item '"N": "2"' "$(d update-item --table-name smoke --key '{"pk":{"S":"a"},"sk":{"N":"1"}}' --update-expression 'SET n = :one + :one' --expression-attribute-values '{":one":{"N":"1"}}' --return-values ALL_NEW)"
check query '"Count": 2' "$(d query --table-name smoke --key-condition-expression 'pk = :p' --expression-attribute-values '{":p":{"S":"a"}}')"
check query-desc '"N": "2"' "$(d query --table-name smoke --key-condition-expression 'pk = :p AND sk > :s' --expression-attribute-values '{":p":{"S":"a"},":s":{"N":"1"}}' --no-scan-index-forward)"
check scan '"ScannedCount": 2' "$(d scan --table-name smoke)"
d transact-write-items --client-request-token smoke-token --transact-items '[
  {"Put":{"TableName":"smoke","Item":{"pk":{"S":"b"},"sk":{"N":"1"}},"ConditionExpression":"attribute_not_exists(pk)"}},
  {"Delete":{"TableName":"smoke","Key":{"pk":{"S":"a"},"sk":{"N":"2"}}}}]'
check transact-write-items-cancelled 'TransactionCanceledException' "$(d transact-write-items --transact-items '[
  {"Put":{"TableName":"smoke","Item":{"pk":{"S":"b"},"sk":{"N":"1"}},"ConditionExpression":"attribute_not_exists(pk)"}}]' 2>&1 || true)"
d update-time-to-live --table-name smoke --time-to-live-specification Enabled=true,AttributeName=exp >/dev/null
check describe-time-to-live '"TimeToLiveStatus": "ENABLED"' "$(d describe-time-to-live --table-name smoke)"
check missing-table 'ResourceNotFoundException' "$(d describe-table --table-name nope 2>&1 || true)"
sarn=$(d describe-table --table-name smoke --query Table.LatestStreamArn --output text)
check list-streams "$sarn" "$(ds list-streams --table-name smoke)"
check describe-stream '"StreamStatus": "ENABLED"' "$(ds describe-stream --stream-arn "$sarn")"
recs=""
for sid in $(ds describe-stream --stream-arn "$sarn" --query 'StreamDescription.Shards[].ShardId' --output text); do
  sit=$(ds get-shard-iterator --stream-arn "$sarn" --shard-id "$sid" --shard-iterator-type TRIM_HORIZON --query ShardIterator --output text)
  recs+=$(ds get-records --shard-iterator "$sit")
done
check get-records-insert '"eventName": "INSERT"' "$recs"
check get-records-modify '"eventName": "MODIFY"' "$recs"
check get-records-remove '"eventName": "REMOVE"' "$recs"
check get-records-old-image '"OldImage"' "$recs"
d delete-table --table-name smoke >/dev/null
d wait table-not-exists --table-name smoke
echo "ok   delete-table"
# SNS: a topic fanning out to three queues, each with a filter policy and
# a dead-letter queue (issue 16); the first queue is deleted to fill its
# dead-letter queue.
n() { aws --endpoint-url "$ENDPOINT" sns "$@"; }
esc() { local s=${1//\\/\\\\}; printf '%s' "${s//\"/\\\"}"; } # a JSON string's inside
topic=$(n create-topic --name fanout --query TopicArn --output text)
check list-topics "$topic" "$(n list-topics)"
for name in red blue big; do
  qurl=$(q create-queue --queue-name "fan-$name" --query QueueUrl --output text)
  durl=$(q create-queue --queue-name "fan-$name-dlq" --query QueueUrl --output text)
  qarn=$(q get-queue-attributes --queue-url "$qurl" --attribute-names QueueArn --query Attributes.QueueArn --output text)
  darn=$(q get-queue-attributes --queue-url "$durl" --attribute-names QueueArn --query Attributes.QueueArn --output text)
  case $name in
    red) policy='{"color":["red"]}' ;;
    blue) policy='{"color":[{"equals-ignore-case":"BLUE"}]}' ;;
    big) policy='{"size":[{"numeric":[">",10]}]}' ;;
  esac
  attrs=$(printf '{"FilterPolicy":"%s","RedrivePolicy":"%s"}' "$(esc "$policy")" "$(esc "{\"deadLetterTargetArn\":\"$darn\"}")")
  sub=$(n subscribe --topic-arn "$topic" --protocol sqs --notification-endpoint "$qarn" --return-subscription-arn \
    --attributes "$attrs" --query SubscriptionArn --output text)
  check "get-subscription-attributes $name" '"FilterPolicy"' "$(n get-subscription-attributes --subscription-arn "$sub")"
done
check list-subscriptions-by-topic 'fan-big' "$(n list-subscriptions-by-topic --topic-arn "$topic")"
check publish '"MessageId"' "$(n publish --topic-arn "$topic" --message red-small \
  --message-attributes '{"color":{"DataType":"String","StringValue":"red"},"size":{"DataType":"Number","StringValue":"1"}}')"
n publish --topic-arn "$topic" --message blue-big \
  --message-attributes '{"color":{"DataType":"String","StringValue":"Blue"},"size":{"DataType":"Number","StringValue":"50"}}' >/dev/null
recv() { q receive-message --queue-url "$(q get-queue-url --queue-name "$1" --query QueueUrl --output text)" --wait-time-seconds 5 --max-number-of-messages 10; }
check "sns to fan-red" 'red-small' "$(recv fan-red)"
check "sns to fan-blue" 'blue-big' "$(recv fan-blue)"
check "sns to fan-big" 'blue-big' "$(recv fan-big)"
q delete-queue --queue-url "$(q get-queue-url --queue-name fan-red --query QueueUrl --output text)"
n publish --topic-arn "$topic" --message red-again --message-attributes '{"color":{"DataType":"String","StringValue":"red"}}' >/dev/null
check "sns dead-letter queue" 'red-again' "$(recv fan-red-dlq)"
check sns-missing-topic 'NotFound' "$(n get-topic-attributes --topic-arn "${topic}x" 2>&1 || true)"
n delete-topic --topic-arn "$topic"
echo "ok   delete-topic"

# EventBridge and EventBridge Scheduler.
ev() { aws --endpoint-url "$ENDPOINT" events "$@"; }
sch() { aws --endpoint-url "$ENDPOINT" scheduler "$@"; }
eurl=$(q create-queue --queue-name smoke-events --query QueueUrl --output text)
earn=$(q get-queue-attributes --queue-url "$eurl" --attribute-names QueueArn --query Attributes.QueueArn --output text)
check create-event-bus '"EventBusArn"' "$(ev create-event-bus --name smoke)"
check list-event-buses '"smoke"' "$(ev list-event-buses)"
check put-rule '"RuleArn"' "$(ev put-rule --name paid --event-bus-name smoke --event-pattern '{"source":["shop"],"detail":{"state":["paid"]}}')"
check bad-pattern 'InvalidEventPatternException' "$(ev put-rule --name bad --event-bus-name smoke --event-pattern '{"a":"x"}' 2>&1 || true)"
check put-targets '"FailedEntryCount": 0' "$(ev put-targets --rule paid --event-bus-name smoke --targets "Id=q,Arn=$earn,RetryPolicy={MaximumRetryAttempts=3}")"
check list-targets-by-rule "$earn" "$(ev list-targets-by-rule --rule paid --event-bus-name smoke)"
bus_arn=$(ev describe-event-bus --name smoke --query Arn --output text)
check create-archive '"ArchiveArn"' "$(ev create-archive --archive-name smoke --event-source-arn "$bus_arn")"
check put-events '"FailedEntryCount": 0' "$(ev put-events --entries '[{"Source":"shop","DetailType":"order","Detail":"{\"state\":\"paid\"}","EventBusName":"smoke"}]')"
check event-delivered '\"state\":\"paid\"' "$(q receive-message --queue-url "$eurl" --wait-time-seconds 10)"
check test-event-pattern '"Result": true' "$(ev test-event-pattern --event-pattern '{"source":["shop"]}' --event '{"id":"1","account":"1","source":"shop","time":"2026-01-01T00:00:00Z","region":"us-east-1","resources":[],"detail-type":"x","detail":{}}')"
check describe-archive '"ArchiveName": "smoke"' "$(ev describe-archive --archive-name smoke)"
ev remove-targets --rule paid --event-bus-name smoke --ids q >/dev/null
ev delete-rule --name paid --event-bus-name smoke
ev delete-event-bus --name smoke
check create-schedule-group '"ScheduleGroupArn"' "$(sch create-schedule-group --name smoke)"
check create-schedule '"ScheduleArn"' "$(sch create-schedule --name tick --group-name smoke --schedule-expression 'rate(5 minutes)' \
  --flexible-time-window Mode=OFF --target "Arn=$earn,RoleArn=arn:aws:iam::000000000000:role/s")"
check get-schedule '"ScheduleExpression": "rate(5 minutes)"' "$(sch get-schedule --name tick --group-name smoke)"
check list-schedules '"tick"' "$(sch list-schedules --group-name smoke)"
check schedule-conflict 'ConflictException' "$(sch create-schedule-group --name smoke 2>&1 || true)"
sch delete-schedule --name tick --group-name smoke
check missing-schedule 'ResourceNotFoundException' "$(sch get-schedule --name tick --group-name smoke 2>&1 || true)"
sch delete-schedule-group --name smoke
q delete-queue --queue-url "$eurl"
echo "aws CLI smoke test passed"
