package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"golang.org/x/term"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	"connectrpc.com/connect"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform/archive"
	"svc.dev/svc/wire"
)

func newAccountCmd() *cobra.Command {
	cf := clientFlags{asUser: true}
	cmd := &cobra.Command{Use: "account", Short: "The signed-in user's account: export it"}
	cf.register(cmd)
	var (
		wait         bool
		outPath, job string
		poll         time.Duration
	)
	export := &cobra.Command{
		Use:   "export",
		Short: "Export everything the account owns into one archive (tar.gz with a SHA-256 index)",
		Long: "Starts an export job. With --wait, follows it with a progress bar, downloads the archive (resuming an\n" +
			"interrupted download), and checks it: its SHA-256 against the job's result, and every file against the\n" +
			"archive's index.json. With --download JOB_ID, downloads and checks the archive of an export already made\n" +
			"(svc jobs list shows them) and starts no new one.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cf.resolve(); err != nil {
				return err
			}
			if cf.session == "" {
				return errors.New("the account export needs the user's session: give --session, or --credentials with a session_cookie")
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			c, err := cf.client()
			if err != nil {
				return err
			}
			if job != "" {
				res, err := c.Jobs.GetJob(ctx, connect.NewRequest(&svcv1.GetJobRequest{Id: job}))
				if err != nil {
					return explain(err)
				}
				if k := res.Msg.GetKind(); k != svcv1.JobKind_JOB_KIND_EXPORT {
					return fmt.Errorf("job %s is a %s job, not an export", job, enumName(k))
				}
				return downloadExport(ctx, out, res.Msg, outPath)
			}
			res, err := c.Account.ExportAccount(ctx, connect.NewRequest(&svcv1.ExportAccountRequest{})) // the client sends an Idempotency-Key
			if err != nil {
				return explain(err)
			}
			j := res.Msg
			if !wait {
				data, err := wire.Marshal(j)
				if err != nil {
					return err
				}
				fmt.Fprintln(out, string(data))
				fmt.Fprintf(cmd.ErrOrStderr(), "When it has finished (%s), download and check it:\n  %s\n",
					cf.commandLine(true, "jobs", "get", j.GetId()), cf.commandLine(false, "account", "export", "--download", j.GetId()))
				return nil
			}
			if j, err = followJob(ctx, out, c.Jobs, j, poll); err != nil {
				return err
			}
			return downloadExport(ctx, out, j, outPath)
		},
	}
	export.Flags().BoolVar(&wait, "wait", false, "wait for the job, download the archive and check it")
	export.Flags().StringVarP(&outPath, "output", "o", "", "where to write the archive (default: the file name the job gives)")
	export.Flags().StringVar(&job, "download", "", "download and check the archive of this finished export job (job_...) instead of starting one")
	export.Flags().DurationVar(&poll, "poll", 500*time.Millisecond, "how often to refresh the progress")
	cmd.AddCommand(export)
	return cmd
}

// downloadExport downloads a finished export job's archive into path (default: the job's file
// name) and checks it.
func downloadExport(ctx context.Context, out io.Writer, j *svcv1.Job, path string) error {
	if j.GetStatus() != svcv1.JobStatus_JOB_STATUS_SUCCEEDED {
		why := j.GetError()
		if why == "" {
			why = "it has not finished"
		}
		return fmt.Errorf("export job %s is %s: %s", j.GetId(), enumName(j.GetStatus()), why)
	}
	r := j.GetResult().GetFields()
	if path == "" {
		path = r["file_name"].GetStringValue()
	}
	size := int64(r["size_bytes"].GetNumberValue())
	if err := download(ctx, out, r["url"].GetStringValue(), path, size); err != nil {
		return err
	}
	return checkArchive(out, path, r["sha256"].GetStringValue())
}

// followJob polls a job until it ends, showing its progress: a bar on a terminal, else one
// plain line per tenth (as svc apply does).
func followJob(ctx context.Context, out io.Writer, jobs svcv1connect.JobServiceClient, j *svcv1.Job, poll time.Duration) (*svcv1.Job, error) {
	var bar *progressbar.ProgressBar
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		bar = progressbar.NewOptions(100, progressbar.OptionSetWriter(out), progressbar.OptionSetDescription("export"),
			progressbar.OptionSetWidth(30), progressbar.OptionShowElapsedTimeOnFinish(), progressbar.OptionThrottle(100*time.Millisecond))
	}
	lastTenth := -1
	for {
		if bar != nil {
			bar.Set(int(j.GetProgress()))
		} else if t := int(j.GetProgress()) / 10; t > lastTenth {
			lastTenth = t
			fmt.Fprintf(out, "%3d%%  job %s %s\n", t*10, j.GetId(), enumName(j.GetStatus()))
		}
		switch j.GetStatus() {
		case svcv1.JobStatus_JOB_STATUS_SUCCEEDED, svcv1.JobStatus_JOB_STATUS_FAILED, svcv1.JobStatus_JOB_STATUS_CANCELLED:
			if bar != nil {
				bar.Finish()
				fmt.Fprintln(out)
			}
			return j, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(poll):
		}
		res, err := jobs.GetJob(ctx, connect.NewRequest(&svcv1.GetJobRequest{Id: j.GetId()}))
		if err != nil {
			return nil, explain(err)
		}
		j = res.Msg
	}
}

// download fetches the archive into path, resuming with Range from what a broken attempt
// wrote (If-Range guards against a changed archive); it tries up to five times.
func download(ctx context.Context, out io.Writer, url, path string, size int64) error {
	if url == "" {
		return errors.New("the export job gives no download URL (the archive expired?)")
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	barOut := io.Discard // a bar only on a terminal; elsewhere one line when done
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		barOut = out
	}
	bar := progressbar.NewOptions64(size, progressbar.OptionSetWriter(barOut), progressbar.OptionSetDescription("download"),
		progressbar.OptionShowBytes(true), progressbar.OptionSetWidth(30), progressbar.OptionUseIECUnits(true),
		progressbar.OptionThrottle(100*time.Millisecond))
	var written int64
	etag := ""
	var lastErr error
	for attempt := 0; attempt < 5 && written < size; attempt++ {
		req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
		if err != nil {
			return err
		}
		if written > 0 {
			req.Header.Set("Range", "bytes="+strconv.FormatInt(written, 10)+"-")
			if etag != "" {
				req.Header.Set("If-Range", etag)
			}
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			lastErr = err
			continue
		}
		switch {
		case res.StatusCode == http.StatusOK:
			if written > 0 { // the server sent the whole archive again
				if _, err := f.Seek(0, io.SeekStart); err != nil {
					res.Body.Close()
					return err
				}
				f.Truncate(0)
				written = 0
				bar.Reset()
			}
		case res.StatusCode == http.StatusPartialContent && written > 0:
		default:
			res.Body.Close()
			return fmt.Errorf("download: %s", res.Status)
		}
		etag = res.Header.Get("ETag")
		n, err := io.Copy(io.MultiWriter(f, bar), res.Body)
		res.Body.Close()
		written += n
		lastErr = err
	}
	if written != size {
		return fmt.Errorf("download: %d of %d bytes: %v", written, size, lastErr)
	}
	bar.Finish()
	if barOut == out {
		fmt.Fprintln(out)
	} else {
		fmt.Fprintf(out, "downloaded %d bytes to %s\n", written, path)
	}
	return f.Sync()
}

// checkArchive checks a downloaded archive's SHA-256 and every file against its index.
func checkArchive(out io.Writer, path, wantSHA string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantSHA {
		return fmt.Errorf("%s: SHA-256 %s, the job says %s", path, got, wantSHA)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	idx, err := archive.Verify(f, nil)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	var bytes int64
	for _, e := range idx.Files {
		bytes += e.Size
	}
	fmt.Fprintf(out, "%s: verified %d files (%d bytes) against index.json; archive SHA-256 %s\n", path, len(idx.Files), bytes, wantSHA)
	return nil
}
