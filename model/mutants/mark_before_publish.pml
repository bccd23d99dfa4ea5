/* Removes the rule that the mark follows the publisher's acknowledgement: the relay runs RelayMark right after its claim and publishes afterwards. */
/* check: safety */
/* expect: NOTHING LOST | FIRST STARTS IN ORDER */
#define MARK_BEFORE_PUBLISH
#include "../relay.pml"
