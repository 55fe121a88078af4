/* Unit tests for the event model's names and mask parsing. */
#include <criterion/criterion.h>

#include "event.h"

Test(event, type_names_round_trip)
{
    for (unsigned t = 0; t < NSC_T_COUNT; t++) {
        const char *name = nsc_type_name(t);
        cr_assert_not_null(name);
        cr_assert_eq(nsc_type_from_name(name), (int)t);
    }
    cr_assert_null(nsc_type_name(NSC_T_COUNT));
    cr_assert_eq(nsc_type_from_name("kernelch"), NSC_T_KERNEL_CH);
    cr_assert_eq(nsc_type_from_name("nope"), -1);
}

Test(event, state_names)
{
    cr_assert_str_eq(nsc_state_name(NSC_S_KERNEL_CH_STOP), "KernelChStop");
    cr_assert_str_eq(nsc_state_name(NSC_S_KERNEL_PHASE_STOP), "KernelPhaseStop");
    cr_assert_str_eq(nsc_state_name(NSC_S_PROXY_STEP_SEND_WAIT), "ProxyStepSendWait");
    cr_assert_null(nsc_state_name(NSC_S_COUNT));
}

Test(event, mask_parse_forms)
{
    uint32_t m = 0;
    cr_assert_eq(nsc_mask_parse("all", &m), 0);
    cr_assert_eq(m, NSC_MASK_ALL);
    cr_assert_eq(nsc_mask_parse("4095", &m), 0);
    cr_assert_eq(m, 4095u);
    cr_assert_eq(nsc_mask_parse("0x42", &m), 0);
    cr_assert_eq(m, 0x42u);
    cr_assert_eq(nsc_mask_parse("coll,KernelCh,proxyop", &m), 0);
    cr_assert_eq(m, (1u << NSC_T_COLL) | (1u << NSC_T_KERNEL_CH) | (1u << NSC_T_PROXY_OP));
}

Test(event, mask_parse_rejects)
{
    uint32_t m = 7;
    cr_assert_eq(nsc_mask_parse("", &m), -1);
    cr_assert_eq(nsc_mask_parse(NULL, &m), -1);
    cr_assert_eq(nsc_mask_parse("coll,,p2p", &m), -1);
    cr_assert_eq(nsc_mask_parse("coll,bogus", &m), -1);
    cr_assert_eq(nsc_mask_parse("70000", &m), -1);
    cr_assert_eq(nsc_mask_parse("12abc", &m), -1);
    cr_assert_eq(m, 7u);
}
