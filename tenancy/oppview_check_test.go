package tenancy

// Every test checks each opportunistic view a decision is served from its
// memo against one made afresh (oppView panics if they differ).
func init() { checkOppViews = true }
