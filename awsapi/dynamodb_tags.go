package awsapi

// DynamoDB: a table's tags (stored with its description, at most 50) and
// its backup settings (runnel takes no backups: both DISABLED), for the
// infrastructure tools that read them.

import "github.com/runnel-dev/runnel/table"

type dynamoTagInput struct {
	ResourceArn string
	Tags        []table.Tag
}

func dynamoTagResource(rq *request, in *dynamoTagInput) (any, error) {
	return nil, rq.h.rn.Tables.TagResource(rq.ctx, in.ResourceArn, in.Tags)
}

type dynamoUntagInput struct {
	ResourceArn string
	TagKeys     []string
}

func dynamoUntagResource(rq *request, in *dynamoUntagInput) (any, error) {
	return nil, rq.h.rn.Tables.UntagResource(rq.ctx, in.ResourceArn, in.TagKeys)
}

// dynamoListTagsInput: NextToken is accepted; every tag comes in the
// first page.
type dynamoListTagsInput struct {
	ResourceArn string
	NextToken   string
}

func dynamoListTagsOfResource(rq *request, in *dynamoListTagsInput) (any, error) {
	return keyed("Tags")(rq.h.rn.Tables.ListTagsOfResource(rq.ctx, in.ResourceArn))
}

func dynamoDescribeContinuousBackups(rq *request, in *tableRef) (any, error) {
	return keyed("ContinuousBackupsDescription")(rq.h.rn.Tables.DescribeContinuousBackups(rq.ctx, tableName(in.TableName)))
}
