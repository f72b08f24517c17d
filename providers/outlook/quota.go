package outlook

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/graph"
)

// folderSizeProperty is PR_MESSAGE_SIZE_EXTENDED (PidTagMessageSizeExtended)
// as Graph names an extended property: on a folder, the bytes of its own
// messages.
const folderSizeProperty = "Long 0x0E08"

var folderSizeQuery = "$top=100&$select=id,displayName,childFolderCount&$expand=" +
	strings.ReplaceAll(url.QueryEscape("singleValueExtendedProperties($filter=id eq '"+folderSizeProperty+"')"), "+", "%20")

// sizedFolder is a mail folder with its size property expanded.
type sizedFolder struct {
	mailFolder
	Props []struct {
		ID    string `json:"id"`
		Value string `json:"value"`
	} `json:"singleValueExtendedProperties"`
}

// Quota reports the mailbox's use: the sum of every mail folder's
// PR_MESSAGE_SIZE_EXTENDED (Deleted Items included, as TrashBytes), with a
// breakdown by top-level folder. Graph v1.0 reports no mailbox quota to
// the mailbox's user, so LimitBytes is 0 (unknown); hidden folders and
// Exchange's Recoverable Items, which count against the quota, are not
// reached (docs/providers.md).
func (p *Provider) Quota(ctx context.Context, _ string) (providers.Quota, error) {
	_, trash, err := p.loadFolders(ctx, false)
	if err != nil {
		return providers.Quota{}, fmt.Errorf("outlook: quota: %w", err)
	}
	q := providers.Quota{Breakdown: map[string]int64{}}
	type todo struct{ link, top, parent string }
	queue := []todo{{"/me/mailFolders?" + folderSizeQuery, "", ""}}
	for seen := 0; len(queue) > 0 && seen < 10000; {
		t := queue[0]
		queue = queue[1:]
		var page graph.Page[sizedFolder]
		if _, err := p.c.Do(ctx, http.MethodGet, t.link, nil, nil, &page); err != nil {
			return providers.Quota{}, fmt.Errorf("outlook: quota: %w", err)
		}
		for _, f := range page.Value {
			seen++
			top := t.top
			if top == "" {
				top = f.DisplayName
			}
			var size int64
			for _, pr := range f.Props {
				if strings.EqualFold(pr.ID, folderSizeProperty) {
					if size, err = strconv.ParseInt(pr.Value, 10, 64); err != nil || size < 0 {
						return providers.Quota{}, fmt.Errorf("outlook: quota: folder %s: size %q: %w", f.ID, pr.Value, providers.ErrTransient)
					}
				}
			}
			q.UsedBytes += size
			q.Breakdown[top] += size
			if f.ID == trash || t.parent == trash && trash != "" {
				q.TrashBytes += size
			}
			if f.ChildFolderCount > 0 {
				parent := f.ID
				if t.parent == trash && trash != "" {
					parent = trash // a folder under Deleted Items is in the trash too
				}
				queue = append(queue, todo{"/me/mailFolders/" + url.PathEscape(f.ID) + "/childFolders?" + folderSizeQuery, top, parent})
			}
		}
		if page.NextLink != "" {
			rel, ok := p.c.Relative(page.NextLink)
			if !ok {
				return providers.Quota{}, fmt.Errorf("outlook: quota: nextLink outside the endpoint: %w", providers.ErrTransient)
			}
			queue = append(queue, todo{rel, t.top, t.parent})
		}
	}
	q.ObservedAt = time.Now().UTC()
	return q, nil
}
