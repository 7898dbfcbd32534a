package rig

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func fmtPlusV(err error) string { return fmt.Sprintf("%+v", err) }
