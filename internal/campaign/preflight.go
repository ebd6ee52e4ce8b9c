package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// Preflight checks the launcher's settings before anything remote happens.
// Each missing setting is explained with the exact line that sets it.
func Preflight(_ context.Context, o *LaunchOptions, forward []string, out io.Writer) error {
	var errs []error
	if o.Catalog == nil {
		errs = append(errs, errors.New("no sites catalog: the --site names are looked up in sites.yaml.\n  set it with:  export MOSAIC_SITES=$HOME/.config/mosaic/sites.yaml   (or pass --sites FILE)"))
	}
	for _, n := range forward {
		v, ok := os.LookupEnv(n)
		switch {
		case !envKeyOK(n):
			errs = append(errs, fmt.Errorf("--forward-env %q is not a variable name", n))
		case !ok || v == "":
			errs = append(errs, fmt.Errorf("%s is not set here, but --forward-env asks to export it on every site.\n  set it with:  export %s=<value>   (or drop --forward-env %s)", n, n, n))
		default:
			fmt.Fprintf(out, "preflight: ok   %s (forwarded)\n", n)
		}
	}
	if o.ExchangeURL != "" && !IsAcademy(o.Spec) && os.Getenv("MOSAIC_EXCHANGE_TOKEN") == "" { // academy: the Globus token, see hosted.go
		errs = append(errs, fmt.Errorf("--exchange-url %s needs the run's token.\n  set it with:  export MOSAIC_EXCHANGE_TOKEN=<token given to mosaic exchange serve --token>", o.ExchangeURL))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("preflight failed (use --skip-preflight to launch anyway):\n%w", err)
	}
	return nil
}

// checkSites runs on every site's login node, in parallel: the mosaic binary
// and the campaign file are there, and the exchange answers from there.
func checkSites(ctx context.Context, plan []sitePlan, o *LaunchOptions, siteURL map[string]string, out io.Writer) error {
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	for i, p := range plan {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = checkSite(ctx, p, o, siteURL[p.spec.Name], out)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("preflight failed (use --skip-preflight to launch anyway):\n%w", err)
	}
	return nil
}

func checkSite(ctx context.Context, p sitePlan, o *LaunchOptions, exchangeURL string, out io.Writer) error {
	conn, err := newSiteConn(p.sys, o.LocalEnv)
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := conn.sh(ctx, `test -x "$1" || { echo "nobin"; exit 0; }; test -r "$2" || { echo "nocampaign"; exit 0; }; "$1" exchange ping --url "$3" 2>&1 || echo "noexchange"`, nil, o.MosaicBin, p.campaign, exchangeURL)
	if err != nil {
		return fmt.Errorf("site %s: cannot reach the login node: %w", p.spec.Name, err)
	}
	s := strings.TrimSpace(string(res.Stdout))
	switch {
	case strings.HasSuffix(s, "nobin"):
		return fmt.Errorf("site %s: %s is not an executable on %s; install mosaic there and pass --mosaic-bin /path/to/mosaic", p.spec.Name, o.MosaicBin, conn.login())
	case strings.HasSuffix(s, "nocampaign"):
		return fmt.Errorf("site %s: campaign file %s is not readable on %s; copy the campaign directory there and add campaign=PATH to the --site", p.spec.Name, p.campaign, conn.login())
	case strings.HasSuffix(s, "noexchange"):
		return fmt.Errorf("site %s: the exchange %s does not answer from %s (%s); pass --exchange-url/--agent-exchange-url with an address the site can reach", p.spec.Name, exchangeURL, conn.login(), lastLines(s, 2))
	}
	fmt.Fprintf(out, "preflight: ok   %s: mosaic, campaign file and exchange reachable from %s\n", p.spec.Name, conn.login())
	return nil
}
