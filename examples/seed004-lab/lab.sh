#!/usr/bin/env bash
# Seed 004's hands-on lab (../shared/seeds/004_*.txt, "Hands-on lab"),
# steps 1 to 7 and its cleanup, as written, against runnel:
#
#   AWS_ENDPOINT_URL=http://127.0.0.1:4566 examples/seed004-lab/lab.sh
#
# What differs from the lab, and only this:
#   - the endpoint: every aws call is given --endpoint-url
#     $AWS_ENDPOINT_URL by the shell function aws below, so the commands
#     themselves are the lab's (the variable alone is not enough: CLI v1's
#     sqs commands replace it with queue.amazonaws.com);
#   - step 7's `aws logs tail /aws/lambda/${PFX}-worker --since 2m` is
#     `aws logs filter-log-events` with the same group and start time
#     when the CLI is v1, which has no `logs tail` (v2 runs the lab's);
#   - the script runs in a temporary directory (handler.py, fn.zip) and
#     stops at the first failing command (set -e);
#   - LAB_FUNCTION=node runs the same scenario with a Node.js function
#     (nodejs20.x, index.mjs with @aws-sdk/client-dynamodb installed from
#     npm into the package) in place of step 5's handler.py;
#   - LAB_EXPECT_ITEMS=N (the test sets it) adds, after the lab's
#     `sleep 8`, a wait of at most 60 s until the table holds N items and
#     the log shows N "processed" lines, so that a loaded machine does not
#     fail the run on the lab's guess of 8 seconds.
set -euo pipefail
: "${AWS_ENDPOINT_URL:?set AWS_ENDPOINT_URL to the endpoint that runnel serve prints}"
export AWS_ENDPOINT_URL AWS_PAGER=""
aws() { command aws --endpoint-url "$AWS_ENDPOINT_URL" "$@"; }
# wait_for_items: LAB_EXPECT_ITEMS (see above).
wait_for_items() {
  [ -n "${LAB_EXPECT_ITEMS:-}" ] || return 0
  local end=$((SECONDS + 60))
  while [ $SECONDS -lt $end ]; do
    items=$(aws dynamodb scan --table-name ${PFX}-events --select COUNT --query Count --output text --region $R)
    logged=$(aws logs filter-log-events --log-group-name /aws/lambda/${PFX}-worker --filter-pattern processed \
      --query 'length(events)' --output text --region $R 2>/dev/null || echo 0)
    if [ "$items" -ge "$LAB_EXPECT_ITEMS" ] && [ "$logged" -ge "$LAB_EXPECT_ITEMS" ]; then return 0; fi
    sleep 1
  done
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
set -x

# Step 1 — Variables.
export R=ap-south-1 ACC=$(aws sts get-caller-identity --query Account --output text)
export PFX=lab-evt

# Step 2 — Create the DynamoDB idempotency/projection table.
aws dynamodb create-table --table-name ${PFX}-events \
  --attribute-definitions AttributeName=id,AttributeType=S \
  --key-schema AttributeName=id,KeyType=HASH \
  --billing-mode PAY_PER_REQUEST --region $R

# Step 3 — Create the work queue and its DLQ with a redrive policy.
DLQ_URL=$(aws sqs create-queue --queue-name ${PFX}-dlq --query QueueUrl --output text)
DLQ_ARN=$(aws sqs get-queue-attributes --queue-url $DLQ_URL --attribute-names QueueArn --query Attributes.QueueArn --output text)
Q_URL=$(aws sqs create-queue --queue-name ${PFX}-work \
  --attributes "{\"VisibilityTimeout\":\"180\",\"RedrivePolicy\":\"{\\\"deadLetterTargetArn\\\":\\\"$DLQ_ARN\\\",\\\"maxReceiveCount\\\":\\\"5\\\"}\"}" \
  --query QueueUrl --output text)
Q_ARN=$(aws sqs get-queue-attributes --queue-url $Q_URL --attribute-names QueueArn --query Attributes.QueueArn --output text)

# Step 4 — Create the execution role.
aws iam create-role --role-name ${PFX}-role \
  --assume-role-policy-document '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}'
aws iam attach-role-policy --role-name ${PFX}-role \
  --policy-arn arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole
aws iam attach-role-policy --role-name ${PFX}-role \
  --policy-arn arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess

# Step 5 — Package and deploy the idempotent function.
if [ "${LAB_FUNCTION:-python}" = node ]; then
# The same function in Node.js, with the AWS SDK for JavaScript v3.
cat > index.mjs <<'JS'
import { DynamoDBClient, PutItemCommand, ConditionalCheckFailedException } from "@aws-sdk/client-dynamodb";
const ddb = new DynamoDBClient({}); // init code: reused on warm invokes
const T = process.env.TABLE;
export const handler = async (event) => {
  const failures = [];
  for (const r of event.Records) {
    const mid = r.messageId;
    try {
      await ddb.send(new PutItemCommand({ TableName: T, Item: { id: { S: mid } },
        ConditionExpression: "attribute_not_exists(id)" }));
      console.log("processed", mid);
    } catch (e) {
      if (e instanceof ConditionalCheckFailedException) {
        console.log("duplicate, skipped", mid); // idempotent: no double side effect
      } else {
        console.log("error", mid, String(e));
        failures.push({ itemIdentifier: mid }); // partial-batch failure
      }
    }
  }
  return { batchItemFailures: failures };
};
JS
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error @aws-sdk/client-dynamodb
zip -qr fn.zip index.mjs package.json node_modules
sleep 10  # let the role propagate
aws lambda create-function --function-name ${PFX}-worker \
  --runtime nodejs20.x --handler index.handler --timeout 30 --memory-size 256 \
  --role arn:aws:iam::${ACC}:role/${PFX}-role \
  --environment "Variables={TABLE=${PFX}-events}" \
  --zip-file fileb://fn.zip --region $R
else
cat > handler.py <<'PY'
import boto3, json, os
ddb = boto3.client("dynamodb")  # init code: reused on warm invokes
T = os.environ["TABLE"]
def handler(event, _):
    failures = []
    for r in event["Records"]:
        mid = r["messageId"]
        try:
            ddb.put_item(TableName=T, Item={"id": {"S": mid}},
                ConditionExpression="attribute_not_exists(id)")
            print("processed", mid)
        except ddb.exceptions.ConditionalCheckFailedException:
            print("duplicate, skipped", mid)  # idempotent: no double side effect
        except Exception as e:
            print("error", mid, str(e))
            failures.append({"itemIdentifier": mid})  # partial-batch failure
    return {"batchItemFailures": failures}
PY
zip fn.zip handler.py
sleep 10  # let the role propagate
aws lambda create-function --function-name ${PFX}-worker \
  --runtime python3.12 --handler handler.handler --timeout 30 --memory-size 256 \
  --role arn:aws:iam::${ACC}:role/${PFX}-role \
  --environment "Variables={TABLE=${PFX}-events}" \
  --zip-file fileb://fn.zip --region $R
fi

# Step 6 — Map the queue to the function with partial-batch reporting.
aws lambda create-event-source-mapping --function-name ${PFX}-worker \
  --event-source-arn $Q_ARN --batch-size 10 \
  --function-response-types ReportBatchItemFailures --region $R

# Step 7 — Send a message twice; prove idempotency.
aws sqs send-message --queue-url $Q_URL --message-body '{"scan":"SC-1"}'
aws sqs send-message --queue-url $Q_URL --message-body '{"scan":"SC-1"}'
sleep 8
{ set +x; } 2>/dev/null; wait_for_items; set -x
if aws logs tail help >/dev/null 2>&1; then
  aws logs tail /aws/lambda/${PFX}-worker --since 2m --region $R
else # AWS CLI v1: no `logs tail`; the same events
  aws logs filter-log-events --log-group-name /aws/lambda/${PFX}-worker \
    --start-time $(( ($(date +%s) - 120) * 1000 )) --region $R \
    --query 'events[].[timestamp,logStreamName,message]' --output text
fi
# Expect: two messages, but a "processed" then a "duplicate, skipped" if they share a messageId,
# or two "processed" with distinct IDs — and the DynamoDB table holds one item per unique message.
aws dynamodb scan --table-name ${PFX}-events --select COUNT --region $R

# Cleanup.
MID=$(aws lambda list-event-source-mappings --function-name ${PFX}-worker --query 'EventSourceMappings[0].UUID' --output text --region $R)
aws lambda delete-event-source-mapping --uuid $MID --region $R
aws lambda delete-function --function-name ${PFX}-worker --region $R
aws sqs delete-queue --queue-url $Q_URL ; aws sqs delete-queue --queue-url $DLQ_URL
aws dynamodb delete-table --table-name ${PFX}-events --region $R
aws iam detach-role-policy --role-name ${PFX}-role --policy-arn arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole
aws iam detach-role-policy --role-name ${PFX}-role --policy-arn arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess
aws iam delete-role --role-name ${PFX}-role
