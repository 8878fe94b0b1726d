package sim

// Reached is the simulated time and the rounds simulated (for progress
// lines, which read a Status through an interface of their own).
func (s Status) Reached() (t float64, rounds int) { return s.T, s.Rounds }

// JobsDone is the jobs finished, the tracked jobs left and the tracked
// jobs in all.
func (s Status) JobsDone() (done, trackedLeft, tracked int) { return s.Done, s.TrackedLeft, s.Tracked }
