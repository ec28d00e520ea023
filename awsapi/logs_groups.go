package awsapi

// CloudWatch Logs: log groups and log streams (JSON 1.1, X-Amz-Target
// Logs_20140328.<Op>) over package function/logs. Process and managed
// runtime functions write to /aws/lambda/<name>, one stream per execution
// environment. No retention (events are kept until the group is deleted),
// metric filters, subscriptions, Insights queries or Live Tail.

import (
	"cmp"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function/logs"
)

// logsStore is the endpoint's log store (ServiceException when it could
// not be opened).
func (rq *request) logsStore() (*logs.Store, error) {
	if rq.h.logs == nil {
		return nil, awserr.New(awserr.ErrService, "the log store is not open (see runnel's log)")
	}
	return rq.h.logs, nil
}

type logGroupInput struct {
	LogGroupName       string `json:"logGroupName"`
	LogGroupIdentifier string `json:"logGroupIdentifier"`
}

// group is the group the input names, by name or identifier (a name or
// an ARN, with or without ":*").
func (in *logGroupInput) group() (string, error) {
	switch {
	case in.LogGroupName != "" && in.LogGroupIdentifier != "":
		return "", awserr.New(awserr.ErrInvalidParameter, "LogGroup name and LogGroup ARN are mutually exclusive parameters.")
	case in.LogGroupName != "":
		return in.LogGroupName, nil
	case in.LogGroupIdentifier != "":
		id := strings.TrimSuffix(in.LogGroupIdentifier, ":*")
		if i := strings.Index(id, ":log-group:"); i >= 0 {
			id = id[i+len(":log-group:"):]
		}
		return id, nil
	}
	return "", awserr.New(awserr.ErrInvalidParameter, "logGroupName or logGroupIdentifier is required")
}

// existingGroup is the group the input names, which must exist.
func (rq *request) existingGroup(in *logGroupInput) (*logs.Store, string, error) {
	s, err := rq.logsStore()
	if err != nil {
		return nil, "", err
	}
	g, err := in.group()
	if err != nil {
		return nil, "", err
	}
	ok, err := s.GroupExists(rq.ctx, g)
	if err != nil {
		return nil, "", err
	}
	if !ok {
		return nil, "", awserr.New(awserr.ErrResourceNotFound, "The specified log group does not exist.")
	}
	return s, g, nil
}

func (rq *request) logGroupArn(group string) string {
	return "arn:aws:logs:" + rq.h.rn.Engine.Region() + ":" + rq.h.rn.Engine.AccountID() + ":log-group:" + group
}

func logsCreateLogGroup(rq *request, in *logGroupInput) (any, error) {
	s, err := rq.logsStore()
	if err != nil {
		return nil, err
	}
	if in.LogGroupName == "" || len(in.LogGroupName) > 512 {
		return nil, awserr.New(awserr.ErrInvalidParameter, "logGroupName: 1 to 512 characters required")
	}
	created, err := s.CreateGroup(rq.ctx, in.LogGroupName)
	if err != nil {
		return nil, err
	}
	if !created {
		return nil, awserr.New(awserr.ErrResourceAlreadyExists, "The specified log group already exists")
	}
	return nil, nil
}

func logsDeleteLogGroup(rq *request, in *logGroupInput) (any, error) {
	s, g, err := rq.existingGroup(in)
	if err != nil {
		return nil, err
	}
	_, err = s.DeleteGroup(rq.ctx, g)
	return nil, err
}

// logsPage is the page inputs of the Describe calls: limit (1..50,
// default 50) and nextToken (an offset).
type logsPage struct {
	Limit     *int   `json:"limit"`
	NextToken string `json:"nextToken"`
}

// page returns the bounds of the page of n items, and the next token.
func (p *logsPage) page(n int) (from, to int, next string, err error) {
	limit := 50
	if p.Limit != nil {
		if *p.Limit < 1 || *p.Limit > 50 {
			return 0, 0, "", awserr.New(awserr.ErrInvalidParameter, "limit: 1 to 50, got %d", *p.Limit)
		}
		limit = *p.Limit
	}
	if p.NextToken != "" {
		if from, err = strconv.Atoi(p.NextToken); err != nil || from < 0 {
			return 0, 0, "", awserr.New(awserr.ErrInvalidParameter, "The specified nextToken is invalid.")
		}
	}
	from = min(from, n)
	to = min(from+limit, n)
	if to < n {
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

type describeLogGroupsInput struct {
	logsPage
	LogGroupNamePrefix  string `json:"logGroupNamePrefix"`
	LogGroupNamePattern string `json:"logGroupNamePattern"`
}

type logGroupOut struct {
	LogGroupName      string `json:"logGroupName"`
	CreationTime      int64  `json:"creationTime"`
	MetricFilterCount int    `json:"metricFilterCount"`
	Arn               string `json:"arn"`
	LogGroupArn       string `json:"logGroupArn"`
	StoredBytes       int64  `json:"storedBytes"`
	LogGroupClass     string `json:"logGroupClass"`
}

func logsDescribeLogGroups(rq *request, in *describeLogGroupsInput) (any, error) {
	s, err := rq.logsStore()
	if err != nil {
		return nil, err
	}
	if in.LogGroupNamePrefix != "" && in.LogGroupNamePattern != "" {
		return nil, awserr.New(awserr.ErrInvalidParameter, "LogGroup name prefix and LogGroup name pattern are mutually exclusive parameters.")
	}
	groups, err := s.Groups(rq.ctx, in.LogGroupNamePrefix)
	if err != nil {
		return nil, err
	}
	var match []logs.Group
	for _, g := range groups {
		if strings.Contains(g.Name, in.LogGroupNamePattern) {
			match = append(match, g)
		}
	}
	from, to, next, err := in.page(len(match))
	if err != nil {
		return nil, err
	}
	out := []logGroupOut{}
	for _, g := range match[from:to] {
		arn := rq.logGroupArn(g.Name)
		out = append(out, logGroupOut{LogGroupName: g.Name, CreationTime: g.CreationTime, Arn: arn + ":*", LogGroupArn: arn, LogGroupClass: "STANDARD"})
	}
	res := map[string]any{"logGroups": out}
	if next != "" {
		res["nextToken"] = next
	}
	return res, nil
}

type describeLogStreamsInput struct {
	logGroupInput
	logsPage
	LogStreamNamePrefix string `json:"logStreamNamePrefix"`
	OrderBy             string `json:"orderBy"`
	Descending          bool   `json:"descending"`
}

type logStreamOut struct {
	LogStreamName       string `json:"logStreamName"`
	CreationTime        int64  `json:"creationTime"`
	FirstEventTimestamp int64  `json:"firstEventTimestamp,omitempty"`
	LastEventTimestamp  int64  `json:"lastEventTimestamp,omitempty"`
	LastIngestionTime   int64  `json:"lastIngestionTime,omitempty"`
	UploadSequenceToken string `json:"uploadSequenceToken,omitempty"`
	Arn                 string `json:"arn"`
	StoredBytes         int64  `json:"storedBytes"`
}

func logsDescribeLogStreams(rq *request, in *describeLogStreamsInput) (any, error) {
	s, g, err := rq.existingGroup(&in.logGroupInput)
	if err != nil {
		return nil, err
	}
	switch in.OrderBy {
	case "", "LogStreamName":
	case "LastEventTime":
		if in.LogStreamNamePrefix != "" {
			return nil, awserr.New(awserr.ErrInvalidParameter, "Cannot order by LastEventTime with a logStreamNamePrefix.")
		}
	default:
		return nil, awserr.New(awserr.ErrInvalidParameter, "orderBy: LogStreamName or LastEventTime, got %q", in.OrderBy)
	}
	streams, err := s.Streams(rq.ctx, g, in.LogStreamNamePrefix)
	if err != nil {
		return nil, err
	}
	if in.OrderBy == "LastEventTime" {
		slices.SortStableFunc(streams, func(a, b logs.Stream) int { return cmp.Compare(a.LastEventTimestamp, b.LastEventTimestamp) })
	}
	if in.Descending {
		for i, j := 0, len(streams)-1; i < j; i, j = i+1, j-1 {
			streams[i], streams[j] = streams[j], streams[i]
		}
	}
	from, to, next, err := in.page(len(streams))
	if err != nil {
		return nil, err
	}
	out := []logStreamOut{}
	for _, st := range streams[from:to] {
		out = append(out, logStreamOut{LogStreamName: st.Name, CreationTime: st.CreationTime,
			FirstEventTimestamp: st.FirstEventTimestamp, LastEventTimestamp: st.LastEventTimestamp, LastIngestionTime: st.LastIngestionTime,
			Arn: rq.logGroupArn(g) + ":log-stream:" + st.Name})
	}
	res := map[string]any{"logStreams": out}
	if next != "" {
		res["nextToken"] = next
	}
	return res, nil
}
