package cli

import (
	"bytes"
	"errors"
	"regexp"
	"testing"
)

func TestProgressOnTerminal(t *testing.T) {
	var stderr bytes.Buffer
	a := &shell{stderr: &stderr, tty: true}
	done := a.progress("migrate step 2: copy routeTables/x")
	inner := a.progress("waiting for the write of routeTables/x")
	inner(nil)
	done(nil)
	a.progress("waiting for the write of routeTables/y")(errors.New("boom"))
	want := regexp.MustCompile(`^routekeeper: migrate step 2: copy routeTables/x\.\.\. done \([0-9.]+m?s\)\nroutekeeper: waiting for the write of routeTables/y\.\.\. failed\n$`)
	if !want.MatchString(stderr.String()) {
		t.Errorf("progress:\n%q\nwant it to match %s", stderr.String(), want)
	}
}
