package runner

// Names runner_test (shellinject_test.go) reads.
var (
	PinNotes        = pinNotes
	SafeComment     = safeComment
	ReproduceScript = reproduceScript
	Evils           = evils
	EvilScenarios   = evilScenarios
	CheckShell      = checkShell
)
