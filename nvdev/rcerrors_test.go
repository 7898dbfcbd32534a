package nvdev

import "testing"

// TestRCErrorNames checks each name rcErrors gives a notifier's error
// against the number nverror.h of release 580 defines for it: a name the
// header gives another number, or no number, would mislabel the loss.
func TestRCErrorNames(t *testing.T) {
	// The ROBUST_CHANNEL_* numbers of nverror.h, release 580.
	header := map[string]uint32{
		"ROBUST_CHANNEL_GR_EXCEPTION":               13,
		"ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY":         13,
		"ROBUST_CHANNEL_FAKE_ERROR":                 14,
		"ROBUST_CHANNEL_BAD_ADDR_ACCESS":            30,
		"ROBUST_CHANNEL_FIFO_ERROR_MMU_ERR_FLT":     31,
		"ROBUST_CHANNEL_PBDMA_ERROR":                32,
		"ROBUST_CHANNEL_CE0_ERROR":                  39,
		"ROBUST_CHANNEL_CE1_ERROR":                  40,
		"ROBUST_CHANNEL_CE2_ERROR":                  41,
		"ROBUST_CHANNEL_RESETCHANNEL_VERIF_ERROR":   43,
		"ROBUST_CHANNEL_GR_FAULT_DURING_CTXSW":      44,
		"ROBUST_CHANNEL_PREEMPTIVE_REMOVAL":         45,
		"ROBUST_CHANNEL_GPU_ECC_DBE":                48,
		"ROBUST_CHANNEL_NVDEC0_ERROR":               68,
		"ROBUST_CHANNEL_GR_CLASS_ERROR":             69,
		"ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS": 79,
		"ROBUST_CHANNEL_CONTAINED_ERROR":            94,
		"ROBUST_CHANNEL_UNCONTAINED_ERROR":          95,
	}
	for code, name := range rcErrors {
		want, ok := header[name]
		switch {
		case !ok:
			t.Errorf("error %d is named %s, which nverror.h does not define", code, name)
		case want != code:
			t.Errorf("error %d is named %s, which nverror.h gives the number %d", code, name, want)
		}
	}
}
