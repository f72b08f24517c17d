package plan

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

// WriteJSON writes msg (a plan, or a list of plans) as the REST JSON the codec would
// write for it with every plan's objects, streaming those from the store: msg's plans are
// headers, and each header's empty "objects":[] is replaced by its objects, one chunk in
// memory at a time. A plan stored whole is encoded as it is.
func WriteJSON(ctx context.Context, chunks func(context.Context, string) iter.Seq2[[]*svcv1.PlanObject, error], w io.Writer, msg proto.Message, plans []*svcv1.Plan) error {
	body, err := wire.Marshal(msg)
	if err != nil {
		return err
	}
	empty := []byte(`"objects":[]`)
	var buf []byte
	for _, p := range plans {
		if len(p.Objects) > 0 {
			continue // encoded whole: no "objects":[] of its own
		}
		i := bytes.Index(body, empty)
		if i < 0 {
			return fmt.Errorf("plan %s: no objects field in its JSON", p.PlanId)
		}
		if _, err := w.Write(body[:i+len(empty)-1]); err != nil {
			return err
		}
		body = body[i+len(empty)-1:]
		first := true
		for objs, err := range chunks(ctx, p.PlanId) {
			if err != nil {
				return err
			}
			buf = buf[:0]
			for _, o := range objs {
				if !first {
					buf = append(buf, ',')
				}
				first = false
				if buf, err = wire.Append(buf, o); err != nil {
					return err
				}
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	_, err = w.Write(body)
	return err
}
