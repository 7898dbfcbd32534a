package rig

import "fmt"

func fmtPlusV(err error) string { return fmt.Sprintf("%+v", err) }
